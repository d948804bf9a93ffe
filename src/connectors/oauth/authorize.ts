/**
 * A member connects an `oauth` connector: discovery, the client (configured or registered), then
 * the authorization-code flow with PKCE (S256) and the resource indicator (RFC 8707), through the
 * SDK's `startAuthorization` / `exchangeAuthorization`. The state and the PKCE verifier stay here:
 * the state (hashed) is the callback's one-time credential, the verifier is sealed.
 */
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { exchangeAuthorization, startAuthorization } from '@modelcontextprotocol/sdk/client/auth.js';
import type { OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import type { Actor } from '../../access/index.ts';
import { recordActivity } from '../../core/activity.ts';
import { conflict } from '../../core/errors.ts';
import { inTransaction } from '../../db/transaction.ts';
import { isMember } from '../../members/index.ts';
import type { Deps } from '../../platform/deps.ts';
import type { ConnectorRow } from '../presenter.ts';
import { getConnector } from '../service.ts';
import { clientFor, clientInformationById } from './client.ts';
import { storeConnection } from './connections.ts';
import { discoverOAuthServer, oauthFailure, oauthFetch, type ServerMetadata } from './discovery.ts';
import { announceConnection } from './events.ts';
import { oauthKeyring, seal, unseal } from './sealed.ts';

/** How long a started authorization waits for its callback. */
export const AUTHORIZATION_TTL_SECONDS = 10 * 60;

export const CALLBACK_PATH = '/connectors/oauth/callback';

/** Where the authorization server sends the browser back: PUBLIC_URL when set, else this request's origin. */
export const callbackUrl = (deps: Pick<Deps, 'config'>, origin: string) => `${(deps.config.PUBLIC_URL || origin).replace(/\/$/, '')}${CALLBACK_PATH}`;

const stateHash = (state: string) => createHash('sha256').update(state, 'utf8').digest();
const verifierBinding = (id: string) => `authorization:${id}`;

/** POST /connectors/{connector_id}/oauth/authorize: the URL the member opens, and until when it is good. */
export async function startConnection(
  deps: Pick<Deps, 'config' | 'db'>,
  actor: Actor,
  connectorId: string,
  origin: string,
): Promise<{ authorization_url: string; expires_at: string }> {
  const connector = requireOAuthConnector(await getConnector(deps, actor, connectorId), 'oauth');
  const keyring = await oauthKeyring(deps);
  const server = await discoverOAuthServer(deps, connector);
  const redirectUri = callbackUrl(deps, origin);
  const client = await clientFor(deps, connector, server, redirectUri);
  const scope = client.scope ?? server.scope;
  const state = randomBytes(32).toString('base64url');
  let started: Awaited<ReturnType<typeof startAuthorization>>;
  try {
    started = await startAuthorization(server.authorizationServer, {
      metadata: server.metadata,
      clientInformation: client.information,
      redirectUrl: redirectUri,
      state,
      ...(scope && { scope }),
      ...(server.resource && { resource: new URL(server.resource) }),
    });
  } catch (error) {
    throw oauthFailure(connector, (error as Error).message);
  }
  const id = randomUUID();
  // The member's authorizations that expired unanswered go (each start cleans up after its member).
  await deps.db('connector_oauth_authorizations').where({ user_id: actor.userId }).where('expires_at', '<', deps.db.fn.now()).delete();
  const [row] = (await deps
    .db('connector_oauth_authorizations')
    .insert({
      id,
      state_hash: stateHash(state),
      connector_id: connector.id,
      organization_id: connector.organization_id,
      user_id: actor.userId,
      code_verifier: seal(keyring, started.codeVerifier, verifierBinding(id)),
      key_id: keyring.current.id,
      redirect_uri: redirectUri,
      issuer: server.issuer,
      authorization_server: server.authorizationServer,
      server_metadata: JSON.stringify(server.metadata),
      resource: server.resource,
      scope,
      client_id: client.information.client_id,
      expires_at: deps.db.raw('now() + make_interval(secs => ?)', [AUTHORIZATION_TTL_SECONDS]),
    })
    .returning('expires_at')) as { expires_at: Date }[];
  return { authorization_url: started.authorizationUrl.href, expires_at: row!.expires_at.toISOString() };
}

export function requireOAuthConnector(connector: ConnectorRow, scheme: 'oauth' | 'oauth_client_credentials'): ConnectorRow {
  if (connector.deleted_at) throw conflict('the connector is deleted');
  if (connector.type !== 'mcp') throw conflict(`type: only mcp connectors connect with OAuth (this one is ${connector.type})`, ['type']);
  if (connector.auth_scheme !== scheme) throw conflict(`auth_scheme: the connector's auth_scheme is ${connector.auth_scheme}, not ${scheme}`, ['auth_scheme']);
  return connector;
}

interface PendingAuthorization {
  id: string;
  connector_id: string;
  organization_id: string;
  user_id: string;
  code_verifier: Buffer;
  key_id: string;
  redirect_uri: string;
  issuer: string;
  authorization_server: string;
  server_metadata: ServerMetadata;
  resource: string | null;
  client_id: string;
  expires_at: Date;
}

export interface CallbackQuery {
  state?: string | undefined;
  code?: string | undefined;
  error?: string | undefined;
  error_description?: string | undefined;
  iss?: string | undefined;
}

/** How the callback ended, for its page: `connector` is named when the state was good. */
export type CallbackOutcome = { connected: true; connector: string } | { connected: false; connector: string | null; reason: string };

/**
 * GET /connectors/oauth/callback: consumes the state (once: the row is deleted as it is read), then
 * exchanges the code for the member's tokens. The member must still be a member and the connector
 * live and `oauth`: checked now, not when they started.
 */
export async function completeConnection(deps: Pick<Deps, 'config' | 'db'>, query: CallbackQuery): Promise<CallbackOutcome> {
  if (!query.state) return { connected: false, connector: null, reason: 'the answer carries no state' };
  const [pending] = (await deps
    .db('connector_oauth_authorizations')
    .where({ state_hash: stateHash(query.state) })
    .delete()
    .returning('*')) as PendingAuthorization[];
  if (!pending || pending.expires_at.getTime() <= Date.now())
    return { connected: false, connector: null, reason: 'this authorization is unknown, was used already or expired: start it again' };
  const connector = (await deps.db('connectors').where({ id: pending.connector_id }).first()) as ConnectorRow | undefined;
  const name = connector?.name ?? null;
  if (!connector || connector.deleted_at || connector.auth_scheme !== 'oauth')
    return { connected: false, connector: name, reason: 'the connector no longer connects with OAuth' };
  if (!(await isMember(deps.db, pending.organization_id, pending.user_id)))
    return { connected: false, connector: name, reason: 'you are no longer a member of its organization' };
  if (query.error)
    return {
      connected: false,
      connector: name,
      reason: `the authorization server answered ${query.error}${query.error_description ? `: ${query.error_description}` : ''}`,
    };
  // RFC 9207: an answer naming another issuer is a mix-up, whoever sent it.
  if (query.iss !== undefined && query.iss !== pending.issuer)
    return { connected: false, connector: name, reason: `the answer comes from ${query.iss}, not ${pending.issuer}` };
  if (!query.code) return { connected: false, connector: name, reason: 'the answer carries no code' };
  const keyring = await oauthKeyring(deps);
  const client = await clientInformationById(deps, connector.id, pending.client_id);
  if (!client) return { connected: false, connector: name, reason: 'the connector’s OAuth client changed meanwhile: start again' };
  const { fetch, close } = oauthFetch(deps);
  let tokens: OAuthTokens;
  try {
    tokens = await exchangeAuthorization(pending.authorization_server, {
      metadata: pending.server_metadata,
      clientInformation: client,
      authorizationCode: query.code,
      codeVerifier: unseal(keyring, pending.code_verifier, pending.key_id, verifierBinding(pending.id)),
      redirectUri: pending.redirect_uri,
      ...(pending.resource && { resource: new URL(pending.resource) }),
      fetchFn: fetch,
    });
  } catch (error) {
    return { connected: false, connector: name, reason: `the token exchange failed: ${(error as Error).message}` };
  } finally {
    await close();
  }
  await inTransaction(deps.db, async (trx) => {
    const row = await storeConnection(
      trx,
      keyring,
      { connector_id: connector.id, organization_id: connector.organization_id, user_id: pending.user_id },
      { issuer: pending.issuer, authorizationServer: pending.authorization_server, metadata: pending.server_metadata, resource: pending.resource },
      pending.client_id,
      tokens,
    );
    await recordActivity(trx, {
      organizationId: connector.organization_id,
      actorId: pending.user_id,
      action: 'connector_connection.connected',
      subjectType: 'connector',
      subjectId: connector.id,
      data: {},
    });
    await announceConnection(trx, connector, row);
  });
  return { connected: true, connector: connector.name };
}
