import ipaddr from 'ipaddr.js';

/**
 * Which network addresses server-side fetches may reach: ordinary public unicast only. An IPv6
 * address that carries an IPv4 address (IPv4-compatible ::a.b.c.d, IPv4-mapped ::ffff:a.b.c.d and
 * its RFC 6145 sibling, NAT64 64:ff9b::/96, 6to4 2002::/16, Teredo 2001::/32) is judged by the IPv4
 * address it leads to, since that is where the packets go (::127.0.0.1 is this host); every other
 * special IPv6 range (loopback, unspecified, link-local, ULA, multicast, site-local, documentation,
 * NAT64 local-use 64:ff9b:1::/48, reserved…) and every special IPv4 range (private, link-local incl.
 * cloud metadata, CGNAT…) is refused, since most of them can route to this host or its network.
 */
export function isPublicAddress(address: string): boolean {
  return classify(address).public;
}

/** The range an address falls in (`loopback`, `private`…; for an embedded IPv4, its range and the form that carried it), for refusal messages. */
export function addressRange(address: string): string {
  return classify(address).range;
}

interface Verdict {
  public: boolean;
  range: string;
}

function classify(address: string): Verdict {
  const parsed = parseAddress(address);
  if (!parsed) return { public: false, range: 'invalid' };
  if (parsed.kind() === 'ipv4') return ipv4Verdict(parsed as ipaddr.IPv4);
  const v6 = parsed as ipaddr.IPv6;
  const carried = embeddedIPv4(v6);
  if (carried) {
    // Judged by the IPv4 address it leads to; a Teredo address must lead to public addresses on both ends.
    const verdicts = carried.addresses.map(ipv4Verdict);
    const refused = verdicts.find((verdict) => !verdict.public);
    if (refused) return { public: false, range: `${refused.range} (IPv4 ${carried.addresses.join(', ')} inside ${carried.form})` };
    return { public: true, range: 'unicast' };
  }
  const range = v6.range();
  // ipaddr.js counts these as ordinary unicast; they are not global.
  if (range === 'unicast' && NON_GLOBAL_V6.some(([prefix, bits]) => v6.match(prefix, bits))) return { public: false, range: 'reserved' };
  return { public: range === 'unicast', range };
}

/**
 * An IP literal as the socket will use it. A dotted IPv6 tail goes through the WHATWG URL parser
 * first: ipaddr.js reads `::127.0.0.1` as `::ffff:127.0.0.1`, a different address.
 */
function parseAddress(address: string): ipaddr.IPv4 | ipaddr.IPv6 | null {
  let literal = address;
  if (address.includes(':') && address.includes('.')) {
    try {
      literal = bareHost(new URL(`http://[${address}]/`).hostname);
    } catch {
      return null;
    }
  }
  return ipaddr.isValid(literal) ? ipaddr.parse(literal) : null;
}

function ipv4Verdict(address: ipaddr.IPv4): Verdict {
  const range = address.range();
  return { public: range === 'unicast', range };
}

/** Prefixes ipaddr.js does not name: NAT64 local-use (RFC 8215: where the IPv4 sits depends on the local prefix length), 3fff::/20 (RFC 9637), site-local (RFC 3879). */
const NON_GLOBAL_V6: [ipaddr.IPv6, number][] = [
  [ipaddr.IPv6.parse('64:ff9b:1::'), 48],
  [ipaddr.IPv6.parse('3fff::'), 20],
  [ipaddr.IPv6.parse('fec0::'), 10],
];

const v4At = (bytes: number[], at: number, xor = 0) => ipaddr.fromByteArray(bytes.slice(at, at + 4).map((byte) => byte ^ xor)) as ipaddr.IPv4;
const zero = (bytes: number[], from: number, to: number) => bytes.slice(from, to).every((byte) => byte === 0);

/** The IPv4 address(es) an IPv6 address carries, and the form carrying them; null for an address that carries none. */
export function embeddedIPv4(address: ipaddr.IPv6): { form: string; addresses: ipaddr.IPv4[] } | null {
  const bytes = address.toByteArray();
  const word = (index: number) => (bytes[index]! << 8) | bytes[index + 1]!;
  // ::/128 and ::1 are IPv6's own unspecified and loopback addresses, named as such.
  if (zero(bytes, 0, 15) && bytes[15]! <= 1) return null;
  if (zero(bytes, 0, 12)) return { form: 'an IPv4-compatible IPv6 address (::a.b.c.d)', addresses: [v4At(bytes, 12)] };
  if (zero(bytes, 0, 10) && word(10) === 0xffff) return { form: 'an IPv4-mapped IPv6 address (::ffff:a.b.c.d)', addresses: [v4At(bytes, 12)] };
  if (zero(bytes, 0, 8) && word(8) === 0xffff && word(10) === 0)
    return { form: 'an IPv4-translated IPv6 address (::ffff:0:a.b.c.d)', addresses: [v4At(bytes, 12)] };
  if (word(0) === 0x64 && word(2) === 0xff9b && zero(bytes, 4, 12)) return { form: 'a NAT64 address (64:ff9b::/96)', addresses: [v4At(bytes, 12)] };
  if (word(0) === 0x2002) return { form: 'a 6to4 address (2002::/16)', addresses: [v4At(bytes, 2)] };
  // Teredo: the server's address in bits 32–63, the client's (where packets go) obfuscated in the last 32 bits.
  if (word(0) === 0x2001 && word(2) === 0) return { form: 'a Teredo address (2001::/32)', addresses: [v4At(bytes, 12, 0xff), v4At(bytes, 4)] };
  return null;
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
  return parseAddress(bare)?.toNormalizedString() ?? bare;
}
