// Real protocol peers on loopback for the connector OAuth tests: an authorization server
// (oidc-provider, a certified OpenID/OAuth implementation) with dynamic registration, PKCE,
// resource indicators, refresh-token rotation, revocation, introspection and client credentials;
// and an MCP server (the official SDK's) that asks for OAuth per the MCP authorization spec and
// validates every token by introspection at that server.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import Provider, { errors } from 'oidc-provider';
import { z } from 'zod';
import { readJson } from '../support/upstream.ts';

const listen = async (server: http.Server) => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
};

export const RESOURCE_SERVER_CLIENT = { client_id: 'mcp-resource-server', client_secret: 'resource-server-secret-0123456789' };
export const MACHINE_CLIENT = { client_id: 'org-machine', client_secret: 'org-machine-secret-0123456789' };

export interface AuthorizationServer {
  issuer: string;
  port: number;
  provider: Provider;
  /** The access-token lifetime (seconds) of tokens issued from now on. */
  setTokenTtl(seconds: number): void;
  /** Every successful token request, by grant type, in order. */
  grants: string[];
  /** Grant ids revoked (by the revocation endpoint or the test). */
  revokedGrants: string[];
  /** The grant ids issued to an account. */
  grantsOf(accountId: string): string[];
  /** Ends an account's grants at the server (as if the user revoked the app there). */
  revokeGrantsOf(accountId: string): Promise<void>;
  /** Destroys the access tokens issued so far (the grant and its refresh token live on). */
  destroyAccessTokens(): Promise<void>;
  close(): Promise<void>;
}

export async function startAuthorizationServer(mcpResource: () => string): Promise<AuthorizationServer> {
  let handler: http.RequestListener = () => undefined;
  const server = http.createServer((req, res) => handler(req, res));
  const port = await listen(server);
  const issuer = `http://127.0.0.1:${port}`;
  let tokenTtl = 3600;
  const grants: string[] = [];
  const revokedGrants: string[] = [];
  const grantsByAccount = new Map<string, string[]>();
  const accessTokens: { destroy(): Promise<void> }[] = [];

  const provider = new Provider(issuer, {
    clients: [
      { ...RESOURCE_SERVER_CLIENT, grant_types: [], response_types: [], redirect_uris: [] },
      { ...MACHINE_CLIENT, grant_types: ['client_credentials'], response_types: [], redirect_uris: [] },
    ],
    cookies: { keys: ['oauth-peers-cookie-key'] },
    findAccount: (_ctx: unknown, id: string) => ({ accountId: id, claims: () => ({ sub: id }) }),
    interactions: { url: (_ctx: unknown, interaction: { uid: string }) => `/interaction/${interaction.uid}` },
    pkce: { required: () => true },
    issueRefreshToken: (_ctx: unknown, client: { grantTypeAllowed(type: string): boolean }) => client.grantTypeAllowed('refresh_token'),
    // Every refresh rotates: presenting a used refresh token again revokes the whole grant.
    rotateRefreshToken: () => true,
    ttl: { AccessToken: () => tokenTtl, RefreshToken: 24 * 3600, Grant: 24 * 3600, Session: 3600, Interaction: 600, ClientCredentials: () => tokenTtl },
    features: {
      devInteractions: { enabled: false },
      registration: { enabled: true },
      revocation: { enabled: true },
      introspection: { enabled: true },
      clientCredentials: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: (_ctx: unknown, _client: unknown, oneOf?: string) => oneOf ?? mcpResource(),
        useGrantedResource: () => true,
        getResourceServerInfo: (_ctx: unknown, indicator: string) => {
          if (indicator !== mcpResource()) throw new errors.InvalidTarget();
          return { scope: 'tools', accessTokenTTL: tokenTtl, accessTokenFormat: 'opaque' };
        },
      },
    },
  });
  provider.on('grant.success', (ctx: { oidc: { params?: Record<string, unknown> } }) => grants.push(String(ctx.oidc.params?.grant_type)));
  provider.on('grant.saved', (grant: { accountId?: string; jti: string }) => {
    if (!grant.accountId) return;
    const list = grantsByAccount.get(grant.accountId) ?? [];
    if (!list.includes(grant.jti)) list.push(grant.jti);
    grantsByAccount.set(grant.accountId, list);
  });
  provider.on('grant.revoked', (_ctx: unknown, grantId: string) => revokedGrants.push(grantId));
  provider.on('access_token.saved', (token: { destroy(): Promise<void> }) => accessTokens.push(token));

  const callback = provider.callback();
  handler = async (req, res) => {
    if (!req.url?.startsWith('/interaction/')) return callback(req, res);
    // The browser's sign-in and consent, approved at once for the account it names.
    try {
      const details = await provider.interactionDetails(req, res);
      const account = String(req.headers['x-test-account'] ?? 'someone');
      if (details.prompt.name === 'login') {
        await provider.interactionFinished(req, res, { login: { accountId: account } }, { mergeWithLastSubmission: false });
        return;
      }
      const { missingOIDCScope, missingResourceScopes } = details.prompt.details as {
        missingOIDCScope?: string[];
        missingResourceScopes?: Record<string, string[]>;
      };
      const grant = details.grantId
        ? (await provider.Grant.find(details.grantId))!
        : new provider.Grant({ accountId: details.session!.accountId, clientId: String(details.params.client_id) });
      if (missingOIDCScope) grant.addOIDCScope(missingOIDCScope.join(' '));
      for (const [indicator, scopes] of Object.entries(missingResourceScopes ?? {})) grant.addResourceScope(indicator, scopes.join(' '));
      const grantId = await grant.save();
      await provider.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true });
    } catch (error) {
      res.writeHead(500, { 'content-type': 'text/plain' });
      res.end(String(error));
    }
  };

  return {
    issuer,
    port,
    provider,
    setTokenTtl: (seconds) => {
      tokenTtl = seconds;
    },
    grants,
    revokedGrants,
    grantsOf: (accountId) => grantsByAccount.get(accountId) ?? [],
    async revokeGrantsOf(accountId) {
      for (const id of grantsByAccount.get(accountId) ?? []) await (await provider.Grant.find(id))?.destroy();
    },
    async destroyAccessTokens() {
      for (const token of accessTokens.splice(0)) await token.destroy();
    },
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export interface OAuthMcpServer {
  port: number;
  url: string;
  /** Each request: the bearer token's subject when introspection found it active, else null. */
  seen: { method: string | undefined; subject: string | null }[];
  /** Tokens it was shown, in order. */
  tokens: string[];
  close(): Promise<void>;
}

/**
 * An MCP server that answers 401 with `WWW-Authenticate: Bearer resource_metadata=…` without a valid
 * token, serves its protected resource metadata (RFC 9728), and introspects each token at the
 * authorization server (active, for this resource). `whoami` answers the token's subject.
 */
export async function startOAuthMcpServer(authorizationServer: () => AuthorizationServer): Promise<OAuthMcpServer> {
  const seen: OAuthMcpServer['seen'] = [];
  const tokens: string[] = [];
  let port = 0;
  const resource = () => `http://127.0.0.1:${port}/mcp`;
  const metadataUrl = () => `http://127.0.0.1:${port}/.well-known/oauth-protected-resource/mcp`;
  const server = http.createServer(async (req, res) => {
    if (req.method === 'GET' && req.url === '/.well-known/oauth-protected-resource/mcp') {
      res.writeHead(200, { 'content-type': 'application/json' });
      return void res.end(
        JSON.stringify({
          resource: resource(),
          authorization_servers: [authorizationServer().issuer],
          scopes_supported: ['tools'],
          bearer_methods_supported: ['header'],
        }),
      );
    }
    const body = req.method === 'POST' ? await readJson(req) : undefined;
    const token = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
    if (token) tokens.push(token);
    const subject = token ? await introspect(authorizationServer(), token, resource()) : null;
    seen.push({ method: body?.method, subject });
    if (subject === null) {
      res.writeHead(401, {
        'content-type': 'application/json',
        'www-authenticate': `Bearer error="invalid_token", resource_metadata="${metadataUrl()}", scope="tools"`,
      });
      return void res.end(JSON.stringify({ error: 'invalid_token' }));
    }
    const mcp = new McpServer({ name: 'tracker', version: '1.0.0' });
    mcp.registerTool('whoami', { description: 'Says whose token called it', inputSchema: {} }, async () => ({
      content: [{ type: 'text', text: `sub=${subject}` }],
    }));
    mcp.registerTool('add', { description: 'Adds two numbers', inputSchema: { a: z.number(), b: z.number() } }, async ({ a, b }) => ({
      content: [{ type: 'text', text: `sum=${a + b}` }],
    }));
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on('close', () => {
      void transport.close();
      void mcp.close();
    });
    await mcp.connect(transport);
    await transport.handleRequest(req, res, body);
  });
  port = await listen(server);
  return {
    port,
    url: resource(),
    seen,
    tokens,
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** RFC 7662 at the authorization server: the subject of an active token for `resource` (a client-credentials token's is its client), else null. */
async function introspect(as: AuthorizationServer, token: string, resource: string): Promise<string | null> {
  const response = await fetch(`${as.issuer}/token/introspection`, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      authorization: `Basic ${Buffer.from(`${RESOURCE_SERVER_CLIENT.client_id}:${RESOURCE_SERVER_CLIENT.client_secret}`).toString('base64')}`,
    },
    body: new URLSearchParams({ token }).toString(),
  });
  const answer = (await response.json()) as { active?: boolean; aud?: string | string[]; sub?: string; client_id?: string };
  if (!answer.active) return null;
  const audience = Array.isArray(answer.aud) ? answer.aud : [answer.aud];
  if (!audience.includes(resource)) return null;
  return answer.sub ?? `client:${answer.client_id}`;
}

/**
 * The member's browser: opens the authorization URL, keeps the server's cookies, signs in and
 * consents as `account` (the server approves at once), and follows the redirects up to the
 * service's callback, which it opens too. Answers the callback's status and page.
 */
export async function authorizeInBrowser(
  authorizationUrl: string,
  account: string,
  serviceUrl: string,
): Promise<{ status: number; page: string; callbackUrl: string }> {
  const jar = new Map<string, string>();
  let url = authorizationUrl;
  for (let hop = 0; hop < 20; hop++) {
    if (url.startsWith(serviceUrl)) {
      const response = await fetch(url, { redirect: 'manual' });
      return { status: response.status, page: await response.text(), callbackUrl: url };
    }
    const response = await fetch(url, {
      redirect: 'manual',
      headers: { cookie: [...jar].map(([name, value]) => `${name}=${value}`).join('; '), 'x-test-account': account },
    });
    for (const cookie of response.headers.getSetCookie()) {
      const [pair] = cookie.split(';');
      const at = pair!.indexOf('=');
      jar.set(pair!.slice(0, at), pair!.slice(at + 1));
    }
    await response.arrayBuffer();
    const location = response.headers.get('location');
    if (response.status < 300 || response.status > 399 || !location) throw new Error(`the authorization server answered ${response.status} at ${url}`);
    url = new URL(location, url).href;
  }
  throw new Error('too many redirects');
}
