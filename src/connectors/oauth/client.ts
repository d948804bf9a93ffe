// The OAuth client the service is at a connector's authorization server: the one an admin
// configured (pre-registered there), else one registered dynamically (RFC 7591) and kept for that
// issuer and redirect URI.
import { registerClient } from '@modelcontextprotocol/sdk/client/auth.js';
import type { OAuthClientInformationMixed, OAuthClientMetadata } from '@modelcontextprotocol/sdk/shared/auth.js';
import type { Knex } from 'knex';
import type { Deps } from '../../platform/deps.ts';
import type { ConnectorRow } from '../presenter.ts';
import { type OAuthServer, oauthFailure, oauthFetch } from './discovery.ts';
import { oauthKeyring, seal, unseal } from './sealed.ts';

export interface OAuthClientRow {
  connector_id: string;
  source: 'configured' | 'registered';
  issuer: string | null;
  redirect_uri: string | null;
  client_id: string;
  client_secret: Buffer | null;
  key_id: string | null;
  registration: Record<string, unknown>;
  scope: string | null;
  created_at: Date;
  updated_at: Date;
}

const secretBinding = (connectorId: string, clientId: string) => `client:${connectorId}:${clientId}`;

/** The stored client as the SDK takes it (its secret opened). */
async function asClientInformation(deps: Pick<Deps, 'config'>, row: OAuthClientRow): Promise<OAuthClientInformationMixed> {
  const secret =
    row.client_secret && row.key_id
      ? unseal(await oauthKeyring(deps), row.client_secret, row.key_id, secretBinding(row.connector_id, row.client_id))
      : undefined;
  return { ...(row.registration as object), client_id: row.client_id, ...(secret !== undefined && { client_secret: secret }) } as OAuthClientInformationMixed;
}

export const storedClient = async (db: Knex, connectorId: string) =>
  (await db('connector_oauth_clients').where({ connector_id: connectorId }).first()) as OAuthClientRow | undefined;

/** The client with this id (the one a pending authorization or a connection was made with), or null when it was replaced. */
export async function clientInformationById(
  deps: Pick<Deps, 'config' | 'db'>,
  connectorId: string,
  clientId: string,
): Promise<OAuthClientInformationMixed | null> {
  const row = await storedClient(deps.db, connectorId);
  return row && row.client_id === clientId ? asClientInformation(deps, row) : null;
}

/** The configured client, else the registered one for this issuer and redirect URI, else a new registration. */
export async function clientFor(
  deps: Pick<Deps, 'config' | 'db'>,
  connector: ConnectorRow,
  server: OAuthServer,
  redirectUri: string,
): Promise<{ information: OAuthClientInformationMixed; scope: string | null }> {
  const row = await storedClient(deps.db, connector.id);
  if (row?.source === 'configured') return { information: await asClientInformation(deps, row), scope: row.scope };
  if (row && row.issuer === server.issuer && row.redirect_uri === redirectUri) return { information: await asClientInformation(deps, row), scope: null };
  if (!server.metadata.registration_endpoint)
    throw oauthFailure(
      connector,
      'the authorization server does not offer dynamic client registration: an admin configures its client (PUT /connectors/{connector_id}/oauth/client)',
    );
  const supported = server.metadata.token_endpoint_auth_methods_supported;
  const method =
    !supported || supported.includes('client_secret_basic') ? 'client_secret_basic' : supported.includes('client_secret_post') ? 'client_secret_post' : 'none';
  const clientMetadata: OAuthClientMetadata = {
    client_name: 'Workspace Platform',
    redirect_uris: [redirectUri],
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    token_endpoint_auth_method: method,
    // No `scope`: it is asked for in each authorization; a registration naming a resource's scopes is refused by servers that register only their own.
  };
  const { fetch, close } = oauthFetch(deps);
  let registered: Awaited<ReturnType<typeof registerClient>>;
  try {
    registered = await registerClient(server.authorizationServer, { metadata: server.metadata, clientMetadata, fetchFn: fetch });
  } catch (error) {
    throw oauthFailure(connector, `dynamic client registration failed: ${(error as Error).message}`);
  } finally {
    await close();
  }
  const { client_secret: secret, ...registration } = registered;
  const keyring = secret ? await oauthKeyring(deps) : null;
  // A registration raced by another (or a client an admin configured meanwhile): the stored one wins, this one is left unused.
  await deps.db.raw(
    `INSERT INTO connector_oauth_clients (connector_id, source, issuer, redirect_uri, client_id, client_secret, key_id, registration)
     VALUES (?, 'registered', ?, ?, ?, ?, ?, ?)
     ON CONFLICT (connector_id) DO UPDATE SET issuer = EXCLUDED.issuer, redirect_uri = EXCLUDED.redirect_uri, client_id = EXCLUDED.client_id,
       client_secret = EXCLUDED.client_secret, key_id = EXCLUDED.key_id, registration = EXCLUDED.registration, updated_at = now()
     WHERE connector_oauth_clients.source = 'registered'
       AND (connector_oauth_clients.issuer IS DISTINCT FROM EXCLUDED.issuer OR connector_oauth_clients.redirect_uri IS DISTINCT FROM EXCLUDED.redirect_uri)`,
    [
      connector.id,
      server.issuer,
      redirectUri,
      registered.client_id,
      keyring && secret ? seal(keyring, secret, secretBinding(connector.id, registered.client_id)) : null,
      keyring?.current.id ?? null,
      JSON.stringify(registration),
    ],
  );
  const stored = (await storedClient(deps.db, connector.id))!;
  return { information: await asClientInformation(deps, stored), scope: stored.source === 'configured' ? stored.scope : null };
}

/** Sets the connector's pre-registered client (an admin's): it replaces any registered one. */
export async function configureClient(
  deps: Pick<Deps, 'config'>,
  trx: Knex.Transaction,
  connectorId: string,
  input: { client_id: string; client_secret?: string | null | undefined; scope?: string | null | undefined },
): Promise<OAuthClientRow> {
  const keyring = input.client_secret ? await oauthKeyring(deps) : null;
  const values = {
    source: 'configured',
    issuer: null,
    redirect_uri: null,
    client_id: input.client_id,
    client_secret: keyring && input.client_secret ? seal(keyring, input.client_secret, secretBinding(connectorId, input.client_id)) : null,
    key_id: keyring?.current.id ?? null,
    registration: JSON.stringify({}),
    scope: input.scope ?? null,
  };
  const [row] = (await trx('connector_oauth_clients')
    .insert({ connector_id: connectorId, ...values })
    .onConflict('connector_id')
    .merge({ ...values, updated_at: trx.fn.now() })
    .returning('*')) as OAuthClientRow[];
  return row!;
}
