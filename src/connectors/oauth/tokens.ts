/**
 * The bearer token a connector call sends for an OAuth connector: the member's (auth_scheme
 * `oauth`) or the organization's (`oauth_client_credentials`), refreshed shortly before it expires
 * and once after the server refused it. A refresh holds the connection row's lock (SELECT … FOR
 * UPDATE) and re-reads it: turns that waited on the lock find the new token (its generation moved)
 * and use it, so concurrent turns make one refresh — never two with one refresh token, which a
 * rotating server answers by revoking the grant.
 */
import { fetchToken, refreshAuthorization } from '@modelcontextprotocol/sdk/client/auth.js';
import { InvalidClientError, InvalidGrantError, UnauthorizedClientError } from '@modelcontextprotocol/sdk/server/auth/errors.js';
import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import type { OAuthClientInformationMixed, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import type { Knex } from 'knex';
import { recordActivity } from '../../core/activity.ts';
import { inTransaction } from '../../db/transaction.ts';
import { isMember } from '../../members/index.ts';
import type { Deps } from '../../platform/deps.ts';
import { ConnectorCallError } from '../call-error.ts';
import type { ConnectorRow } from '../presenter.ts';
import type { Keyring } from '../secrets.ts';
import { clientInformationById, storedClient } from './client.ts';
import { connectionOf, type ConnectionRow, openAccessToken, openRefreshToken, storeConnection, tokenColumns } from './connections.ts';
import { discoverOAuthServer, oauthFetch } from './discovery.ts';
import { announceConnection } from './events.ts';
import { oauthKeyring } from './sealed.ts';

/** A token is renewed when it has less than this left (or a quarter of its lifetime, if that is shorter). */
const RENEW_BEFORE_SECONDS = 60;

export interface Bearer {
  token: string;
  /** Which token it is: a refusal names it, so a turn that waited sees whether another one renewed it already. */
  generation: number;
}

export const isOAuthConnector = (connector: Pick<ConnectorRow, 'auth_scheme'>) =>
  connector.auth_scheme === 'oauth' || connector.auth_scheme === 'oauth_client_credentials';

/** Whose connection a call uses: the member's, or the organization's (client credentials). */
const subjectOf = (connector: ConnectorRow, userId: string) => (connector.auth_scheme === 'oauth_client_credentials' ? null : userId);

const callError = (connector: ConnectorRow, said: string) => new ConnectorCallError(`connector "${connector.name}": ${said}`, null);

function renewsSoon(row: ConnectionRow): boolean {
  if (row.expires_at === null) return false;
  const left = (row.expires_at.getTime() - Date.now()) / 1000;
  const lifetime = ((row.expires_at.getTime() - (row.refreshed_at ?? row.connected_at).getTime()) / 1000) * 0.25;
  return left <= Math.min(RENEW_BEFORE_SECONDS, Math.max(lifetime, 0));
}

const notUsable = (connector: ConnectorRow, row: ConnectionRow | undefined) =>
  !row
    ? `you have not connected it; connect with POST /connectors/${connector.id}/oauth/authorize`
    : row.status === 'needs_reconsent'
      ? `your connection needs re-consent (the authorization server refused it); connect again with POST /connectors/${connector.id}/oauth/authorize`
      : `your connection is ${row.status}; connect again with POST /connectors/${connector.id}/oauth/authorize`;

/**
 * The token for a call by `userId` (who must still be a member of the connector's organization):
 * the stored one, renewed first when it expires soon; the organization's obtained on first use.
 */
export async function oauthBearer(deps: Pick<Deps, 'config' | 'db'>, connector: ConnectorRow, userId: string): Promise<Bearer> {
  if (!(await isMember(deps.db, connector.organization_id, userId))) throw callError(connector, 'you are no longer a member of its organization');
  const subject = subjectOf(connector, userId);
  const keyring = await oauthKeyring(deps);
  const row = (await connectionOf(deps.db, connector.id, subject).first()) as ConnectionRow | undefined;
  if (subject === null && !row) return obtainOrganizationToken(deps, keyring, connector);
  if (row?.status !== 'connected' || !row.access_token) throw callError(connector, notUsable(connector, row));
  if (!renewsSoon(row)) return { token: openAccessToken(keyring, row), generation: row.token_generation };
  return renew(deps, keyring, connector, subject, row.token_generation, 'expiring');
}

/**
 * After the server answered 401 to `refused`: a new token (once), unless another turn renewed it
 * meanwhile. A second refusal of a renewed token is `needsReconsent`'s to say.
 */
export async function bearerAfterRefusal(deps: Pick<Deps, 'config' | 'db'>, connector: ConnectorRow, userId: string, refused: Bearer): Promise<Bearer> {
  return renew(deps, await oauthKeyring(deps), connector, subjectOf(connector, userId), refused.generation, 'refused');
}

/** The server refused a token it was just given: the connection needs the member's consent again. */
export async function needsReconsent(deps: Pick<Deps, 'db'>, connector: ConnectorRow, userId: string, why: string): Promise<ConnectorCallError> {
  const subject = subjectOf(connector, userId);
  await inTransaction(deps.db, (trx) => markConnection(trx, connector, subject, 'needs_reconsent', why));
  return callError(connector, notUsable(connector, { status: 'needs_reconsent' } as ConnectionRow));
}

type Renewal = { bearer: Bearer } | { refused: string };

async function renew(
  deps: Pick<Deps, 'config' | 'db'>,
  keyring: Keyring,
  connector: ConnectorRow,
  subject: string | null,
  seenGeneration: number,
  why: 'expiring' | 'refused',
): Promise<Bearer> {
  const { fetch, close } = oauthFetch(deps);
  try {
    // The transaction commits a status change it decides (needs re-consent) before the caller is told.
    const outcome = await inTransaction(deps.db, async (trx): Promise<Renewal> => {
      const row = (await connectionOf(trx, connector.id, subject).forUpdate().first()) as ConnectionRow | undefined;
      if (row?.status !== 'connected' || !row.access_token) return { refused: notUsable(connector, row) };
      // Another turn renewed it while this one waited on the lock: use that token.
      if (row.token_generation !== seenGeneration && !renewsSoon(row))
        return { bearer: { token: openAccessToken(keyring, row), generation: row.token_generation } };
      // Read in this transaction: it holds a pool connection, and must never wait for a second one.
      const inside = { config: deps.config, db: trx };
      const client = await clientInformationById(inside, connector.id, row.client_id);
      if (!client) return refuse(trx, connector, subject, 'needs_reconsent', 'its OAuth client was replaced');
      const refreshToken = openRefreshToken(keyring, row);
      if (subject !== null && !refreshToken)
        return refuse(trx, connector, subject, 'expired', `its access token ${why === 'refused' ? 'was refused' : 'expired'} and no refresh token was issued`);
      let tokens: OAuthTokens;
      try {
        tokens =
          subject === null
            ? await clientCredentialsToken(row.authorization_server, row, client, await organizationScope(inside, connector), fetch)
            : await refreshAuthorization(row.authorization_server, {
                metadata: row.server_metadata,
                clientInformation: client,
                refreshToken: refreshToken!,
                ...(row.resource && { resource: new URL(row.resource) }),
                fetchFn: fetch,
              });
      } catch (error) {
        if (error instanceof InvalidGrantError || error instanceof InvalidClientError || error instanceof UnauthorizedClientError)
          return refuse(trx, connector, subject, 'needs_reconsent', `the authorization server refused the refresh (${error.errorCode}: ${error.message})`);
        throw error;
      }
      const [renewed] = (await trx('connector_oauth_connections')
        .where({ id: row.id })
        .update({ ...tokenColumns(trx, keyring, row, tokens, refreshToken), refreshed_at: trx.fn.now() })
        .returning('token_generation')) as { token_generation: number }[];
      return { bearer: { token: tokens.access_token, generation: renewed!.token_generation } };
    });
    if ('refused' in outcome) throw callError(connector, outcome.refused);
    return outcome.bearer;
  } catch (error) {
    if (error instanceof ConnectorCallError) throw error;
    throw callError(connector, `could not renew its OAuth token: ${(error as Error).message}`);
  } finally {
    await close();
  }
}

async function refuse(
  trx: Knex.Transaction,
  connector: ConnectorRow,
  subject: string | null,
  status: 'expired' | 'needs_reconsent',
  why: string,
): Promise<Renewal> {
  await markConnection(trx, connector, subject, status, why);
  return { refused: notUsable(connector, { status } as ConnectionRow) };
}

/** Sets a connection's status (with why), recorded in the organization's activity. */
export async function markConnection(
  trx: Knex.Transaction,
  connector: ConnectorRow,
  subject: string | null,
  status: 'expired' | 'needs_reconsent',
  why: string,
): Promise<void> {
  const [changed] = (await connectionOf(trx, connector.id, subject)
    .whereNot({ status })
    .update({ status, last_error: why, status_changed_at: trx.fn.now(), updated_at: trx.fn.now() })
    .returning('*')) as ConnectionRow[];
  if (!changed) return;
  await announceConnection(trx, connector, changed);
  await recordActivity(trx, {
    organizationId: connector.organization_id,
    actorId: subject,
    action: `connector_connection.${status}`,
    subjectType: 'connector',
    subjectId: connector.id,
    data: { reason: why },
  });
}

// ——— the organization's connection (client credentials) ———

async function organizationScope(deps: Pick<Deps, 'db'>, connector: ConnectorRow): Promise<string | null> {
  return (await storedClient(deps.db, connector.id))?.scope ?? null;
}

/** RFC 6749 §4.4 through the SDK's token request (its client authentication, the resource indicator). */
function clientCredentialsToken(
  authorizationServer: string,
  server: Pick<ConnectionRow, 'server_metadata' | 'resource'>,
  client: OAuthClientInformationMixed,
  scope: string | null,
  fetch: ReturnType<typeof oauthFetch>['fetch'],
): Promise<OAuthTokens> {
  const provider = {
    redirectUrl: undefined,
    clientMetadata: { redirect_uris: [], grant_types: ['client_credentials'], ...(scope && { scope }) },
    clientInformation: () => client,
    prepareTokenRequest: (wanted?: string) => new URLSearchParams({ grant_type: 'client_credentials', ...(wanted && { scope: wanted }) }),
  } as unknown as OAuthClientProvider;
  return fetchToken(provider, authorizationServer, {
    metadata: server.server_metadata,
    ...(server.resource && { resource: new URL(server.resource) }),
    fetchFn: fetch,
  });
}

/** The organization's first token: discovery, the configured client, a client-credentials grant; a concurrent first use keeps one row. */
async function obtainOrganizationToken(deps: Pick<Deps, 'config' | 'db'>, keyring: Keyring, connector: ConnectorRow): Promise<Bearer> {
  const configured = await storedClient(deps.db, connector.id);
  if (configured?.source !== 'configured')
    throw callError(connector, 'it has no OAuth client configured for the client-credentials grant (PUT /connectors/{connector_id}/oauth/client)');
  let server: Awaited<ReturnType<typeof discoverOAuthServer>>;
  try {
    server = await discoverOAuthServer(deps, connector);
  } catch (error) {
    throw new ConnectorCallError((error as Error).message, null);
  }
  const client = (await clientInformationById(deps, connector.id, configured.client_id))!;
  const { fetch, close } = oauthFetch(deps);
  let tokens: OAuthTokens;
  try {
    tokens = await clientCredentialsToken(
      server.authorizationServer,
      { server_metadata: server.metadata, resource: server.resource },
      client,
      configured.scope ?? server.scope,
      fetch,
    );
  } catch (error) {
    throw callError(connector, `the client-credentials grant failed: ${(error as Error).message}`);
  } finally {
    await close();
  }
  const row = await inTransaction(deps.db, async (trx) => {
    const existing = (await connectionOf(trx, connector.id, null).forUpdate().first()) as ConnectionRow | undefined;
    if (existing?.status === 'connected' && existing.access_token) return existing;
    return storeConnection(
      trx,
      keyring,
      { connector_id: connector.id, organization_id: connector.organization_id, user_id: null },
      server,
      configured.client_id,
      tokens,
    );
  });
  return { token: openAccessToken(keyring, row), generation: row.token_generation };
}
