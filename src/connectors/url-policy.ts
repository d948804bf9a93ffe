import { lookup } from 'node:dns/promises';
import net from 'node:net';
import { badRequest } from '../core/errors.ts';
import { addressRange, bareHost, isAllowlisted, isPublicAddress, parseAllowlist } from '../net/address-policy.ts';

/** How long a connector URL's host may take to resolve before it is judged on its name alone. */
const RESOLVE_TIMEOUT_MS = 1500;

/**
 * The SSRF policy of src/net applied when a connector's URL is saved: http or https, no
 * credentials, and a host that is neither a non-public address literal nor a name resolving to one
 * (unless OUTBOUND_ALLOWLIST opens it). A name that does not resolve now is accepted: DNS may change,
 * so whatever calls the connector later vets the address again at connection time (safeFetch).
 * Returns the URL normalised by the WHATWG parser (`http://2130706433` is `http://127.0.0.1`).
 */
export async function checkConnectorUrl(
  raw: string,
  allowlistEntries: readonly string[],
  credentialsRule = 'must not carry credentials (set them as your connector credential)',
): Promise<string> {
  const refuse = (rule: string) => badRequest(`url: ${rule}`, ['url']);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw refuse('must be an absolute http or https URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw refuse(`scheme ${url.protocol} is not allowed (http and https only)`);
  if (url.username || url.password) throw refuse(credentialsRule);
  url.hash = '';
  const host = bareHost(url.hostname);
  const port = url.port ? Number(url.port) : url.protocol === 'https:' ? 443 : 80;
  if (isAllowlisted(parseAllowlist(allowlistEntries), url.hostname, port)) return url.href;
  // Names the setting that opens it: a developer pointing a webhook or connector at a local server meets this first.
  const notAllowed = `which is not allowed (server-side calls reach public addresses only; an operator may open ${url.hostname}:${port} with OUTBOUND_ALLOWLIST)`;
  if (net.isIP(host)) {
    if (!isPublicAddress(host)) throw refuse(`${host} is a ${addressRange(host)} address, ${notAllowed}`);
    return url.href;
  }
  const name = host.toLowerCase().replace(/\.$/, '');
  if (name === 'localhost' || name.endsWith('.localhost')) throw refuse(`${host} is a loopback name, ${notAllowed}`);
  for (const { address } of await resolveQuietly(name)) {
    if (!isPublicAddress(address)) throw refuse(`${host} resolves to a ${addressRange(address)} address, ${notAllowed}`);
  }
  return url.href;
}

async function resolveQuietly(host: string): Promise<{ address: string }[]> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<{ address: string }[]>((resolve) => {
    timer = setTimeout(() => resolve([]), RESOLVE_TIMEOUT_MS);
  });
  try {
    return await Promise.race([lookup(host, { all: true, verbatim: true }).catch(() => []), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
