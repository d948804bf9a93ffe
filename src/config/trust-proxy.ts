import ipaddr from 'ipaddr.js';

/**
 * Which peers' X-Forwarded-For this service believes (TRUST_PROXY): none (the default: the socket's
 * peer is the client), the number of proxy hops in front of it (`1` behind Heroku's router or one
 * load balancer), or the proxies' own addresses and networks (`10.0.0.0/8, 192.0.2.7`).
 */
export type TrustProxy = { kind: 'none' } | { kind: 'hops'; hops: number } | { kind: 'networks'; networks: [ipaddr.IPv4 | ipaddr.IPv6, number][] };

/** Parses TRUST_PROXY; a string naming what is wrong for a value it cannot use. */
export function parseTrustProxy(value: string | undefined): TrustProxy | string {
  const text = value?.trim() ?? '';
  if (text === '' || text === '0' || text.toLowerCase() === 'none' || text.toLowerCase() === 'false') return { kind: 'none' };
  if (/^\d+$/.test(text)) {
    const hops = Number(text);
    return hops <= 10 ? { kind: 'hops', hops } : 'a hop count must be at most 10';
  }
  const networks: [ipaddr.IPv4 | ipaddr.IPv6, number][] = [];
  for (const entry of text.split(',').map((part) => part.trim())) {
    try {
      if (entry.includes('/')) networks.push(ipaddr.parseCIDR(entry));
      else {
        const address = ipaddr.parse(entry);
        networks.push([address, address.kind() === 'ipv4' ? 32 : 128]);
      }
    } catch {
      return `"${entry}" is neither a hop count nor an IP address or CIDR network (e.g. 1, or 10.0.0.0/8, 192.0.2.7)`;
    }
  }
  return { kind: 'networks', networks };
}

/** Whether an address (as the socket or a proxy reports it) is one of the trusted proxies'. */
export function isTrustedProxy(trust: Extract<TrustProxy, { kind: 'networks' }>, address: string): boolean {
  if (!ipaddr.isValid(address)) return false;
  const parsed = ipaddr.process(address);
  return trust.networks.some(([network, bits]) => network.kind() === parsed.kind() && parsed.match(network, bits));
}
