import { lookup } from 'node:dns/promises';
import net from 'node:net';
import { Agent, request, type Dispatcher } from 'undici';
import { addressRange, bareHost, isAllowlisted, isPublicAddress, type AllowlistEntry } from './address-policy.ts';
import { OutboundFetchError } from './errors.ts';

export interface SafeFetchOptions {
  allowlist: readonly AllowlistEntry[];
  /** Whole exchange, redirects and body included: a slow drip is cut off too. */
  timeoutMs: number;
  maxBytes: number;
  maxRedirects?: number;
  /** Media type (lowercase, no parameters) → accepted? Checked before the body is read. */
  acceptContentType?: (mediaType: string) => boolean;
  signal?: AbortSignal;
  userAgent?: string;
}

export interface SafeFetchResult {
  requestedUrl: string;
  finalUrl: string;
  redirects: string[];
  status: number;
  /** Media type without parameters, lowercase; `application/octet-stream` when absent. */
  contentType: string;
  /** The full Content-Type header as sent. */
  contentTypeHeader: string | null;
  body: Buffer;
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);

/**
 * GET a user-supplied URL without letting it reach this host or its private network. Each hop
 * (redirects are followed by hand) is parsed with the WHATWG URL parser (so `2130706433` or
 * `0x7f.1` become `127.0.0.1`), resolved by us, refused if ANY resolved address is not public
 * unicast, and connected to the vetted address only (DNS rebinding cannot swap it in between).
 */
export async function safeFetch(rawUrl: string, options: SafeFetchOptions): Promise<SafeFetchResult> {
  const deadline = new AbortController();
  const timer = setTimeout(() => deadline.abort(), options.timeoutMs);
  const signal = options.signal ? AbortSignal.any([deadline.signal, options.signal]) : deadline.signal;
  const maxRedirects = options.maxRedirects ?? 5;
  const redirects: string[] = [];
  try {
    let url = parseUrl(rawUrl);
    for (;;) {
      const hop = await fetchHop(url, options, signal);
      if (REDIRECTS.has(hop.status)) {
        const location = hop.headers.location;
        hop.body.destroy();
        await hop.close();
        if (typeof location !== 'string' || !location)
          throw new OutboundFetchError('upstream_status', `${url.href} answered ${hop.status} without a Location`, true);
        if (redirects.length >= maxRedirects) throw new OutboundFetchError('too_many_redirects', `more than ${maxRedirects} redirects`, true);
        url = parseUrl(new URL(location, url).href);
        redirects.push(url.href);
        continue;
      }
      try {
        if (hop.status < 200 || hop.status > 299) {
          const transient = hop.status >= 500 || hop.status === 429 || hop.status === 408;
          throw new OutboundFetchError('upstream_status', `${url.href} answered ${hop.status}`, !transient);
        }
        const header = firstHeader(hop.headers['content-type']);
        const contentType = header?.split(';')[0]?.trim().toLowerCase() || 'application/octet-stream';
        if (options.acceptContentType && !options.acceptContentType(contentType)) {
          throw new OutboundFetchError('content_type_not_allowed', `content type ${contentType} is not accepted`, true);
        }
        const declared = Number(firstHeader(hop.headers['content-length']) ?? NaN);
        if (Number.isFinite(declared) && declared > options.maxBytes) throw tooLarge(options.maxBytes);
        const body = await readLimited(hop.body, options.maxBytes);
        return { requestedUrl: rawUrl, finalUrl: url.href, redirects, status: hop.status, contentType, contentTypeHeader: header ?? null, body };
      } finally {
        hop.body.destroy();
        await hop.close();
      }
    }
  } catch (error) {
    if (deadline.signal.aborted) throw new OutboundFetchError('timeout', `gave up after ${options.timeoutMs} ms`, true);
    if (error instanceof OutboundFetchError) throw error;
    if (options.signal?.aborted) throw error;
    throw new OutboundFetchError('network', `could not fetch: ${(error as Error).message}`, false);
  } finally {
    clearTimeout(timer);
  }
}

export interface SafePostOptions {
  allowlist: readonly AllowlistEntry[];
  /** Whole exchange, body included. */
  timeoutMs: number;
  /** The answer's body is kept up to this many bytes; the rest is not read. */
  keepBytes: number;
  headers: Record<string, string>;
  signal?: AbortSignal;
  userAgent?: string;
  /** Reuse keep-alive connections to the same receiver at the same vetted addresses (webhook deliveries). */
  keepAlive?: boolean;
}

export interface SafePostResult {
  status: number;
  /** The first `keepBytes` of the answer's body. */
  body: Buffer;
  truncated: boolean;
}

/**
 * POST `body` to a user-supplied URL under the same address policy as safeFetch (every resolved
 * address vetted, the connection pinned to it). Redirects are not followed — a 3xx is the answer —
 * and every status is returned, not thrown: the caller judges it. Throws OutboundFetchError when
 * the URL or its address is refused, or on a network failure or the timeout.
 */
export async function safePost(rawUrl: string, body: string, options: SafePostOptions): Promise<SafePostResult> {
  const deadline = new AbortController();
  const timer = setTimeout(() => deadline.abort(), options.timeoutMs);
  const signal = options.signal ? AbortSignal.any([deadline.signal, options.signal]) : deadline.signal;
  try {
    const hop = await fetchHop(parseUrl(rawUrl), options, signal, { method: 'POST', headers: options.headers, body, keepAlive: options.keepAlive === true });
    try {
      const kept = await readKept(hop.body, options.keepBytes);
      return { status: hop.status, ...kept };
    } finally {
      hop.body.destroy();
      await hop.close();
    }
  } catch (error) {
    if (deadline.signal.aborted) throw new OutboundFetchError('timeout', `gave up after ${options.timeoutMs} ms`, false);
    if (error instanceof OutboundFetchError) throw error;
    if (options.signal?.aborted) throw error;
    throw new OutboundFetchError('network', `could not connect: ${(error as Error).message}`, false);
  } finally {
    clearTimeout(timer);
  }
}

async function readKept(body: AsyncIterable<Buffer>, keepBytes: number): Promise<{ body: Buffer; truncated: boolean }> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    chunks.push(chunk);
    size += chunk.length;
    if (size > keepBytes) return { body: Buffer.concat(chunks).subarray(0, keepBytes), truncated: true };
  }
  return { body: Buffer.concat(chunks), truncated: false };
}

function parseUrl(raw: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new OutboundFetchError('url_not_allowed', 'is not a valid URL', true);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new OutboundFetchError('url_not_allowed', `scheme ${url.protocol} is not allowed (http and https only)`, true);
  if (url.username || url.password) throw new OutboundFetchError('url_not_allowed', 'URLs with credentials are not allowed', true);
  url.hash = '';
  return url;
}

interface Hop {
  status: number;
  headers: Dispatcher.ResponseData['headers'];
  body: Dispatcher.ResponseData['body'];
  close(): Promise<void>;
}

interface HopRequest {
  method: 'GET' | 'POST';
  headers: Record<string, string>;
  body?: string;
  /** Reuse keep-alive connections (keptAgent) instead of one connection for this request. */
  keepAlive?: boolean;
}

/** Pinned: the socket goes to the addresses we checked, whatever DNS says a moment later. */
const pinnedTo = (addresses: { address: string; family: number }[]) => ({
  lookup: (_hostname: string, lookupOptions: { all?: boolean }, callback: (...args: any[]) => void) => {
    if (lookupOptions?.all) callback(null, addresses);
    else callback(null, addresses[0]!.address, addresses[0]!.family);
  },
});

/**
 * Keep-alive agents for repeated POSTs to one receiver (webhook deliveries): one per origin AND
 * vetted address set, so a kept connection only ever serves a request whose addresses were vetted
 * to exactly those it is connected to (a name that now resolves elsewhere gets a new agent). At
 * most KEPT_AGENTS, the least recently used closed first; idle connections close after 4 s.
 */
const keptAgents = new Map<string, Agent>();
const KEPT_AGENTS = 256;
function keptAgent(url: URL, addresses: { address: string; family: number }[]): Agent {
  const key = `${url.protocol}//${url.host} ${addresses.map((a) => a.address).join(',')}`;
  let agent = keptAgents.get(key);
  if (agent) keptAgents.delete(key);
  else agent = new Agent({ keepAliveTimeout: 4_000, keepAliveMaxTimeout: 4_000, connect: pinnedTo(addresses) });
  keptAgents.set(key, agent);
  if (keptAgents.size > KEPT_AGENTS) {
    const [oldest, old] = keptAgents.entries().next().value!;
    keptAgents.delete(oldest);
    void old.close().catch(() => {});
  }
  return agent;
}

async function fetchHop(url: URL, options: Pick<SafeFetchOptions, 'allowlist' | 'userAgent'>, signal: AbortSignal, hop?: HopRequest): Promise<Hop> {
  const host = bareHost(url.hostname);
  const port = url.port ? Number(url.port) : url.protocol === 'https:' ? 443 : 80;
  const allowlisted = isAllowlisted(options.allowlist, url.hostname, port);
  const addresses = await vettedAddresses(host, allowlisted, url.host);
  const kept = hop?.keepAlive === true;
  const agent = kept ? keptAgent(url, addresses) : new Agent({ connections: 1, connect: pinnedTo(addresses) });
  const close = () => (kept ? Promise.resolve() : agent.destroy());
  try {
    const response = await request(url, {
      method: hop?.method ?? 'GET',
      dispatcher: agent,
      signal,
      headers: { 'user-agent': options.userAgent ?? 'WorkspacePlatform-LinkImport/1', accept: '*/*', ...hop?.headers },
      ...(hop?.body !== undefined && { body: hop.body }),
    });
    // We destroy bodies we stop reading; that surfaces as an 'error' nobody else listens for.
    response.body.on('error', () => {});
    return { status: response.statusCode, headers: response.headers, body: response.body, close };
  } catch (error) {
    await close();
    throw error;
  }
}

/** The addresses to connect to: every address the name resolves to must be allowed, not just one. */
export async function vettedAddresses(host: string, allowlisted: boolean, hostAndPort: string): Promise<{ address: string; family: number }[]> {
  const literal = net.isIP(host);
  const addresses = literal ? [{ address: host, family: literal }] : await resolve(host);
  for (const { address } of addresses) {
    if (!allowlisted && !isPublicAddress(address)) {
      // Says how to open it: a developer pointing an import at a local server meets this first.
      throw new OutboundFetchError(
        'address_not_allowed',
        `${host} resolves to a ${addressRange(address)} address, which is not allowed (server-side fetches reach public addresses only; an operator may open ${hostAndPort} with OUTBOUND_ALLOWLIST)`,
        true,
      );
    }
  }
  return addresses;
}

async function resolve(host: string): Promise<{ address: string; family: number }[]> {
  try {
    const found = await lookup(host, { all: true, verbatim: true });
    if (!found.length) throw Object.assign(new Error('no addresses'), { code: 'ENOTFOUND' });
    return found;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new OutboundFetchError('dns_failed', `${host} could not be resolved (${code ?? 'error'})`, code === 'ENOTFOUND' || code === 'ENODATA');
  }
}

async function readLimited(body: AsyncIterable<Buffer>, maxBytes: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.length;
    // Stop reading as soon as the limit is passed; the caller destroys the stream.
    if (size > maxBytes) throw tooLarge(maxBytes);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

const tooLarge = (maxBytes: number) => new OutboundFetchError('too_large', `body is larger than ${maxBytes} bytes`, true);

function firstHeader(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}
