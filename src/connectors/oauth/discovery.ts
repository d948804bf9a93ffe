/**
 * Discovery as the MCP authorization specification says: the server's 401 names its protected
 * resource metadata in `WWW-Authenticate` (RFC 9728; else the well-known URLs), which names the
 * authorization server, whose metadata (RFC 8414, or OpenID discovery) names the endpoints. The
 * protocol is the official SDK's (client/auth.js); every request goes through the SSRF guard
 * (src/net/guarded-fetch.ts: each hop resolved and vetted, redirects followed only within an
 * origin by the SDK, each again through the guard), and every URL the flow will use — metadata,
 * authorization, token, registration, revocation — passes the saved-URL policy first.
 */
import {
  discoverAuthorizationServerMetadata,
  discoverOAuthProtectedResourceMetadata,
  extractWWWAuthenticateParams,
} from '@modelcontextprotocol/sdk/client/auth.js';
import type { AuthorizationServerMetadata, OAuthProtectedResourceMetadata } from '@modelcontextprotocol/sdk/shared/auth.js';
import { checkResourceAllowed, resourceUrlFromServerUrl } from '@modelcontextprotocol/sdk/shared/auth-utils.js';
import { AppError, isAppError } from '../../core/errors.ts';
import { parseAllowlist } from '../../net/address-policy.ts';
import { OutboundFetchError } from '../../net/errors.ts';
import { type GuardedFetch, guardedFetch } from '../../net/guarded-fetch.ts';
import type { Deps } from '../../platform/deps.ts';
import type { ConnectorRow } from '../presenter.ts';
import { checkConnectorUrl } from '../url-policy.ts';

const NULL_BODY = new Set([101, 204, 205, 304]);

/** One request to an authorization server or its metadata may take this long. */
export const OAUTH_REQUEST_TIMEOUT_MS = 10_000;

/** RFC 8414 metadata as the SDK parses it, plus RFC 7009 revocation (which its OpenID schema leaves out). */
export type ServerMetadata = AuthorizationServerMetadata & { revocation_endpoint?: string; revocation_endpoint_auth_methods_supported?: string[] };

/** What discovery found, kept with a pending authorization and its connection (refresh and revocation use it). */
export interface OAuthServer {
  issuer: string;
  /** The authorization server's URL as the resource metadata names it. */
  authorizationServer: string;
  metadata: ServerMetadata;
  /** The RFC 8707 resource indicator sent with every authorization and token request. */
  resource: string | null;
  /** What the server asks for (`WWW-Authenticate` scope, else the metadata's scopes_supported). */
  scope: string | null;
}

/** A refusal of the flow, said to the member: 502 naming the connector. */
export const oauthFailure = (connector: Pick<ConnectorRow, 'name'>, said: string) => new AppError('upstream_failed', `connector "${connector.name}": ${said}`);

/** The guarded fetch of one OAuth exchange, each request within OAUTH_REQUEST_TIMEOUT_MS; `close` drops its sockets. */
export function oauthFetch(deps: Pick<Deps, 'config'>): { fetch: GuardedFetch; close: () => Promise<void> } {
  const guard = guardedFetch(parseAllowlist(deps.config.OUTBOUND_ALLOWLIST));
  const fetch: GuardedFetch = async (input, init) => {
    const timeout = AbortSignal.timeout(OAUTH_REQUEST_TIMEOUT_MS);
    const response = await guard.fetch(input, { ...init, signal: init?.signal ? AbortSignal.any([init.signal, timeout]) : timeout });
    // The SDK tells an answer from a string with `instanceof Response`: the global class, not undici's package's.
    return new Response(NULL_BODY.has(response.status) ? null : response.body, {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    });
  };
  return { fetch, close: guard.close };
}

/** Refuses a URL the flow would use when the SSRF policy forbids it (a private address, another scheme, credentials). */
export async function requireAllowedUrl(deps: Pick<Deps, 'config'>, connector: Pick<ConnectorRow, 'name'>, what: string, url: string): Promise<string> {
  try {
    return await checkConnectorUrl(url, deps.config.OUTBOUND_ALLOWLIST, 'must not carry credentials');
  } catch (error) {
    if (isAppError(error, 'validation_failed')) throw oauthFailure(connector, `${what} ${url} is refused: ${error.message.replace(/^url: /, '')}`);
    throw error;
  }
}

/** Runs discovery for the connector's MCP server. 502 when the server does not ask for OAuth, or any step fails or is refused. */
export async function discoverOAuthServer(deps: Pick<Deps, 'config'>, connector: ConnectorRow): Promise<OAuthServer> {
  if (connector.url === null) throw oauthFailure(connector, 'has no url');
  const serverUrl = connector.url;
  const guarded = oauthFetch(deps);
  const close = guarded.close;
  // Metadata documents as they were sent: the revocation endpoint is read from them.
  const documents: Record<string, unknown>[] = [];
  const fetch: GuardedFetch = async (input, init) => {
    const response = await guarded.fetch(input, init);
    if (response.ok && String(input).includes('/.well-known/')) {
      const document = await response
        .clone()
        .json()
        .catch(() => null);
      if (document && typeof document === 'object') documents.push(document as Record<string, unknown>);
    }
    return response;
  };
  try {
    const challenge = await probe(fetch, serverUrl);
    let resourceMetadata: OAuthProtectedResourceMetadata | undefined;
    if (challenge.resourceMetadataUrl) await requireAllowedUrl(deps, connector, 'the protected resource metadata', challenge.resourceMetadataUrl.href);
    try {
      resourceMetadata = await discoverOAuthProtectedResourceMetadata(
        serverUrl,
        { ...(challenge.resourceMetadataUrl && { resourceMetadataUrl: challenge.resourceMetadataUrl }) },
        fetch,
      );
    } catch (error) {
      // A refused address is a refusal; a server without RFC 9728 metadata falls back to its origin (the spec's 2025-03 rule).
      if (error instanceof OutboundFetchError || challenge.resourceMetadataUrl) throw error;
    }
    const authorizationServer = resourceMetadata?.authorization_servers?.[0] ?? new URL('/', serverUrl).href;
    await requireAllowedUrl(deps, connector, 'the authorization server', authorizationServer);
    const parsed = await discoverAuthorizationServerMetadata(authorizationServer, { fetchFn: fetch });
    if (!parsed) throw oauthFailure(connector, `the authorization server ${authorizationServer} publishes no metadata (RFC 8414)`);
    const sent = documents.find((document) => document.issuer === parsed.issuer) ?? {};
    const metadata: ServerMetadata = {
      ...parsed,
      ...(typeof sent.revocation_endpoint === 'string' && { revocation_endpoint: sent.revocation_endpoint }),
      ...(Array.isArray(sent.revocation_endpoint_auth_methods_supported) && {
        revocation_endpoint_auth_methods_supported: sent.revocation_endpoint_auth_methods_supported as string[],
      }),
    };
    if (!metadata.code_challenge_methods_supported?.includes('S256'))
      throw oauthFailure(connector, 'the authorization server does not support PKCE with S256 (code_challenge_methods_supported), which MCP requires');
    await requireAllowedUrl(deps, connector, 'the authorization endpoint', metadata.authorization_endpoint);
    await requireAllowedUrl(deps, connector, 'the token endpoint', metadata.token_endpoint);
    if (metadata.registration_endpoint) await requireAllowedUrl(deps, connector, 'the registration endpoint', metadata.registration_endpoint);
    if (metadata.revocation_endpoint) await requireAllowedUrl(deps, connector, 'the revocation endpoint', metadata.revocation_endpoint);
    const resource = resourceMetadata?.resource ?? resourceUrlFromServerUrl(serverUrl).href;
    if (resourceMetadata && !checkResourceAllowed({ requestedResource: serverUrl, configuredResource: resourceMetadata.resource }))
      throw oauthFailure(connector, `the protected resource metadata names the resource ${resourceMetadata.resource}, which is not this server (${serverUrl})`);
    return {
      issuer: metadata.issuer,
      authorizationServer,
      metadata,
      resource,
      scope: challenge.scope ?? resourceMetadata?.scopes_supported?.join(' ') ?? null,
    };
  } catch (error) {
    if (error instanceof AppError) throw error;
    throw oauthFailure(connector, `OAuth discovery failed: ${(error as Error).message}`);
  } finally {
    await close();
  }
}

/** An unauthenticated `initialize`: a server demanding OAuth answers 401 with `WWW-Authenticate: Bearer resource_metadata=…`. */
async function probe(fetch: GuardedFetch, serverUrl: string): Promise<ReturnType<typeof extractWWWAuthenticateParams>> {
  const response = await fetch(serverUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'workspace-platform', version: '1' } },
    }),
  });
  await response.body?.cancel().catch(() => undefined);
  if (response.status !== 401) throw new Error(`the MCP server answered ${response.status} without a token, not 401: it does not ask for OAuth`);
  return extractWWWAuthenticateParams(response);
}
