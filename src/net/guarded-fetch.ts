import { Agent, fetch as undiciFetch } from 'undici';
import { type AllowlistEntry, bareHost, isAllowlisted } from './address-policy.ts';
import { OutboundFetchError } from './errors.ts';
import { vettedAddresses } from './safe-fetch.ts';

/** A WHATWG `fetch` (what SDK clients take) that only reaches public addresses. */
export type GuardedFetch = (input: string | URL, init?: RequestInit) => Promise<Response>;

/**
 * `fetch` for clients that speak a protocol of their own over HTTP (POST bodies, streamed answers —
 * an MCP server), under the SSRF policy of ./safe-fetch.ts: each request's host is resolved by us,
 * refused unless every address is public unicast (or OUTBOUND_ALLOWLIST opens it), and the socket is
 * pinned to the vetted address. Redirects are not followed (a redirect could lead anywhere).
 * `close()` drops the pinned connections.
 */
export function guardedFetch(allowlist: readonly AllowlistEntry[]): { fetch: GuardedFetch; close: () => Promise<void> } {
  const agents: Agent[] = [];
  const fetch: GuardedFetch = async (input, init) => {
    const url = new URL(String(input));
    if (url.protocol !== 'http:' && url.protocol !== 'https:')
      throw new OutboundFetchError('url_not_allowed', `scheme ${url.protocol} is not allowed (http and https only)`, true);
    if (url.username || url.password) throw new OutboundFetchError('url_not_allowed', 'URLs with credentials are not allowed', true);
    const port = url.port ? Number(url.port) : url.protocol === 'https:' ? 443 : 80;
    const addresses = await vettedAddresses(bareHost(url.hostname), isAllowlisted(allowlist, url.hostname, port), url.host);
    const agent = new Agent({
      connect: {
        lookup: (_hostname: string, options: { all?: boolean }, callback: (error: NodeJS.ErrnoException | null, ...found: never[]) => void) => {
          const answer = callback as (error: null, ...found: unknown[]) => void;
          if (options?.all) answer(null, addresses);
          else answer(null, addresses[0]!.address, addresses[0]!.family);
        },
      },
    });
    agents.push(agent);
    const response = await undiciFetch(url, { ...(init as Record<string, unknown>), redirect: 'manual', dispatcher: agent } as Parameters<
      typeof undiciFetch
    >[1]);
    return response as unknown as Response;
  };
  return { fetch, close: async () => void (await Promise.allSettled(agents.splice(0).map((agent) => agent.destroy()))) };
}
