import ipaddr from 'ipaddr.js';
import type { Context, Next } from 'koa';
import { isTrustedProxy, type TrustProxy } from '../../config/trust-proxy.ts';

/**
 * The client's address as TRUST_PROXY says to find it. The chain is X-Forwarded-For's entries
 * followed by the socket's peer; each proxy appends the address it received from, so only entries
 * that trusted proxies appended can be believed, counted from the right:
 * - none: the peer (a client may send any X-Forwarded-For);
 * - N hops: the entry N places left of the peer (the one the outermost of our N proxies appended);
 * - networks: walking left from the peer past every trusted proxy, the first address that is not one.
 * An entry there that is not an IP address (a proxy that appends something else) gives the peer.
 */
export function resolveClientAddress(forwardedFor: string | undefined, peer: string | undefined, trust: TrustProxy): string {
  const socket = peer ?? 'unknown';
  if (trust.kind === 'none' || !forwardedFor) return socket;
  const chain = [
    ...forwardedFor
      .split(',')
      .map((entry) => entry.trim())
      .filter(Boolean),
    socket,
  ];
  let index = chain.length - 1;
  if (trust.kind === 'hops') index = Math.max(0, index - trust.hops);
  else while (index > 0 && isTrustedProxy(trust, chain[index]!)) index--;
  const client = chain[index]!;
  return ipaddr.isValid(client) ? client : socket;
}

/**
 * Sets `ctx.ip` (what logs and the per-address rate limit read) to the client's true address. Koa's
 * own `proxy` setting is off: it would believe X-Forwarded-For (and -Host, -Proto) from any peer.
 */
export function clientAddress(trust: TrustProxy) {
  return async (ctx: Context, next: Next) => {
    ctx.request.ip = resolveClientAddress(ctx.get('x-forwarded-for') || undefined, ctx.req.socket.remoteAddress, trust);
    await next();
  };
}
