import type { Context } from 'koa';
import { AppError } from '../../core/errors.ts';
import { publicAccess, recordMember } from '../../http/authorize.ts';
import { type AnyRoute, defineRoute } from '../../http/route.ts';
import { connectorIdParams } from '../schema.ts';
import { type CallbackOutcome, callbackUrl, completeConnection, startConnection } from './authorize.ts';
import { presentClient } from './presenter.ts';
import { authorizationStartEnvelope, callbackQuery, connectorConnectionEnvelope, oauthClientEnvelope, setOAuthClientBody } from './schema.ts';
import { deleteOAuthClient, disconnect, getConnection, getOAuthClient, setOAuthClient } from './service.ts';

const tag = 'Connectors';
const aMember = recordMember('connector');
const aManager = recordMember('connector', 'connectors.manage');
const originOf = (ctx: Context) => `${ctx.protocol}://${ctx.host}`;

export const connectorOAuthRoutes: AnyRoute[] = [
  defineRoute({
    method: 'post',
    path: '/connectors/{connector_id}/oauth/authorize',
    operationId: 'startConnectorAuthorization',
    summary: 'Start connecting to an OAuth connector (the MCP authorization flow)',
    description:
      'For an `mcp` connector with `auth_scheme: oauth`. Discovery as the MCP authorization specification says: the server’s 401 `WWW-Authenticate` names its protected resource metadata (RFC 9728), which names the authorization server (RFC 8414 metadata); the service registers itself there (RFC 7591) unless an admin configured a client. Answers the authorization URL (authorization code with PKCE S256 and the `resource` indicator, RFC 8707) to open in the member’s browser; the state and the PKCE verifier stay server-side, and the authorization server returns to `GET /connectors/oauth/callback`. Every URL the flow touches passes the outbound SSRF policy (502 naming it otherwise). 409 when the connector is deleted, is not `mcp` or is not `oauth`; 502 `upstream_failed` when discovery or registration fails or is refused.',
    tag,
    params: connectorIdParams,
    response: { status: 200, description: 'Where to send the member', schema: authorizationStartEnvelope },
    errors: [404, 409, 502, 503],
    authorize: aMember,
    handler: async ({ params, actor, deps, ctx }) => ({ authorization: await startConnection(deps, actor, params.connector_id, originOf(ctx)) }),
  }),
  defineRoute({
    method: 'get',
    path: '/connectors/{connector_id}/oauth/connection',
    operationId: 'getConnectorConnection',
    summary: 'Your OAuth connection to a connector: its status, never a token',
    description:
      'The caller’s own connection (for `oauth_client_credentials`, the organization’s). Any member of the organization (404 otherwise); 409 for a connector that does not use OAuth.',
    tag,
    params: connectorIdParams,
    response: { status: 200, description: 'The connection', schema: connectorConnectionEnvelope },
    errors: [404, 409],
    authorize: aMember,
    handler: async ({ params, actor, deps }) => ({ connection: await getConnection(deps, actor, params.connector_id) }),
  }),
  defineRoute({
    method: 'delete',
    path: '/connectors/{connector_id}/oauth/connection',
    operationId: 'deleteConnectorConnection',
    summary: 'Disconnect: revoke your OAuth connection',
    description:
      'No turn uses the connection from now on (status `revoked`); a job revokes its tokens at the authorization server (RFC 7009, when it has a revocation endpoint) and erases them. The organization’s connection (client credentials) needs `connectors.manage` (403). A connection that is not there is a no-op 204.',
    tag,
    params: connectorIdParams,
    response: { status: 204, description: 'Revoked' },
    errors: [403, 404],
    authorize: aMember,
    handler: ({ params, actor, deps }) => disconnect(deps, actor, params.connector_id),
  }),
  defineRoute({
    method: 'get',
    path: '/connectors/{connector_id}/oauth/client',
    operationId: 'getConnectorOAuthClient',
    summary: 'The connector’s OAuth client (never its secret)',
    description: 'Owners and admins (`connectors.manage`). `redirect_uri` is the callback to register at the authorization server for a configured client.',
    tag,
    params: connectorIdParams,
    response: { status: 200, description: 'The client', schema: oauthClientEnvelope },
    errors: [403, 404],
    authorize: aManager,
    handler: async ({ params, actor, deps, ctx }) => ({
      oauth_client: presentClient(params.connector_id, await getOAuthClient(deps, actor, params.connector_id), callbackUrl(deps, originOf(ctx))),
    }),
  }),
  defineRoute({
    method: 'put',
    path: '/connectors/{connector_id}/oauth/client',
    operationId: 'setConnectorOAuthClient',
    summary: 'Configure a pre-registered OAuth client for the connector',
    description:
      'For an authorization server without dynamic registration, and required for `oauth_client_credentials`. The secret is stored encrypted and never shown again. Replaces a client the service registered itself; existing connections made with another client need re-consent when they next refresh. `connectors.manage` (403); 409 for a connector that is deleted or does not use OAuth.',
    tag,
    params: connectorIdParams,
    body: setOAuthClientBody,
    response: { status: 200, description: 'The client', schema: oauthClientEnvelope },
    errors: [403, 404, 409, 503],
    authorize: aManager,
    handler: async ({ params, body, actor, deps, ctx }) => ({
      oauth_client: presentClient(params.connector_id, await setOAuthClient(deps, actor, params.connector_id, body), callbackUrl(deps, originOf(ctx))),
    }),
  }),
  defineRoute({
    method: 'delete',
    path: '/connectors/{connector_id}/oauth/client',
    operationId: 'deleteConnectorOAuthClient',
    summary: 'Remove the configured OAuth client (back to dynamic registration)',
    tag,
    params: connectorIdParams,
    response: { status: 204, description: 'Removed' },
    errors: [403, 404],
    authorize: aManager,
    handler: ({ params, actor, deps }) => deleteOAuthClient(deps, actor, params.connector_id),
  }),
];

/** Open without a token (CONVENTIONS §2): the one-time state is the credential. */
export const connectorOAuthCallbackRoutes: AnyRoute[] = [
  defineRoute({
    method: 'get',
    path: '/connectors/oauth/callback',
    operationId: 'completeConnectorAuthorization',
    summary: 'Where the authorization server returns the member’s browser (OAuth redirect URI)',
    description:
      'No token: the one-time `state` of a started authorization is the credential (good once, for 10 minutes). Exchanges the `code` (with the PKCE verifier and the resource indicator) for the member’s tokens, stored encrypted, and answers a small HTML page (JSON `{connected, connector}` or the error body to a client whose `Accept` prefers `application/json`): 200 connected, 400 not (an unknown, used or expired state, an error from the authorization server, an answer naming another issuer (RFC 9207), a failed exchange, or a member who left the organization meanwhile).',
    tag,
    public: true,
    query: callbackQuery,
    response: { status: 200, description: 'An HTML page saying whether the connector is connected (400 when it is not)' },
    errors: [],
    authorize: publicAccess('the one-time OAuth state is the credential'),
    answersItself: true,
    handler: async ({ query, deps, ctx }) => {
      answerPage(ctx, await completeConnection(deps, query));
    },
  }),
];

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

function answerPage(ctx: Context, outcome: CallbackOutcome): void {
  // A client that asks for JSON (a script, an SDK) gets the API's own shapes; a browser gets the page.
  if (ctx.accepts('html', 'json') === 'json') {
    if (!outcome.connected)
      throw new AppError('validation_failed', `state: the connection was not made: ${outcome.reason}`, [{ path: ['state'], message: outcome.reason }]);
    ctx.body = { connected: true, connector: outcome.connector };
    return;
  }
  const title = outcome.connected ? `Connected to ${outcome.connector}` : outcome.connector ? `Not connected to ${outcome.connector}` : 'Not connected';
  const said = outcome.connected ? 'You can close this window and go back to the workspace.' : `The connection was not made: ${outcome.reason}.`;
  ctx.status = outcome.connected ? 200 : 400;
  ctx.type = 'text/html; charset=utf-8';
  ctx.set('Cache-Control', 'no-store');
  ctx.set('Referrer-Policy', 'no-referrer');
  ctx.set('Content-Security-Policy', "default-src 'none'; style-src 'unsafe-inline'");
  ctx.body = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(title)}</title></head><body><h1>${escapeHtml(title)}</h1><p>${escapeHtml(said)}</p></body></html>`;
}
