import ipaddr from 'ipaddr.js';

/**
 * Which network addresses server-side fetches may reach. Only ordinary public unicast: every
 * special range ipaddr.js knows (loopback, private, link-local incl. cloud metadata, CGNAT,
 * multicast, unspecified, ULA, IPv4-mapped, NAT64, 6to4, Teredo, reserved…) is refused, since
 * most of them can route to this host or its private network.
 */
export function isPublicAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false;
  const parsed = ipaddr.parse(address);
  return parsed.range() === 'unicast';
}

/** The range an address falls in (`loopback`, `private`, `ipv4Mapped`…), for refusal messages. */
export function addressRange(address: string): string {
  return ipaddr.isValid(address) ? ipaddr.parse(address).range() : 'invalid';
}

/** `[::1]` → `::1`: URL hostnames keep IPv6 brackets, resolvers and ipaddr.js do not. */
export function bareHost(hostname: string): string {
  return hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
}

export interface AllowlistEntry {
  host: string;
  /** Absent: every port of the host; present: only this one. */
  port?: number;
}

/** Parses `OUTBOUND_ALLOWLIST` entries (`host`, `host:port`, `[v6]`, `[v6]:port`), normalised like URL hosts. */
export function parseAllowlist(entries: readonly string[]): AllowlistEntry[] {
  return entries.map((entry) => {
    const url = new URL(`http://${entry}`);
    const host = normaliseHost(url.hostname);
    return url.port ? { host, port: Number(url.port) } : { host };
  });
}

/** An allowlisted `host:port` opens that port only; a bare `host` opens all of its ports. */
export function isAllowlisted(allowlist: readonly AllowlistEntry[], host: string, port: number): boolean {
  const normalised = normaliseHost(host);
  return allowlist.some((entry) => entry.host === normalised && (entry.port === undefined || entry.port === port));
}

function normaliseHost(hostname: string): string {
  const bare = bareHost(hostname).toLowerCase().replace(/\.$/, '');
  // One spelling per IP (::ffff:7f00:1 and ::ffff:127.0.0.1 are the same address).
  return ipaddr.isValid(bare) ? ipaddr.parse(bare).toNormalizedString() : bare;
}
