// Connections: a member's OAuth tokens for a connector (or, for client credentials, the
// organization's: user_id null), sealed at rest, bound to their row.
import type { OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import type { Knex } from 'knex';
import type { Keyring } from '../secrets.ts';
import type { OAuthServer, ServerMetadata } from './discovery.ts';
import { seal, unseal } from './sealed.ts';

export const connectionStatuses = ['connected', 'expired', 'revoked', 'needs_reconsent'] as const;
export type ConnectionStatus = (typeof connectionStatuses)[number];

export interface ConnectionRow {
  id: string;
  connector_id: string;
  organization_id: string;
  user_id: string | null;
  status: ConnectionStatus;
  access_token: Buffer | null;
  refresh_token: Buffer | null;
  key_id: string | null;
  token_generation: number;
  token_type: string | null;
  scope: string | null;
  expires_at: Date | null;
  issuer: string;
  authorization_server: string;
  server_metadata: ServerMetadata;
  resource: string | null;
  client_id: string;
  revoke_pending: boolean;
  last_error: string | null;
  connected_at: Date;
  refreshed_at: Date | null;
  status_changed_at: Date;
  created_at: Date;
  updated_at: Date;
}

/** The connection of `userId` (null: the organization's) to the connector. */
export function connectionOf(db: Knex, connectorId: string, userId: string | null) {
  const query = db('connector_oauth_connections').where({ connector_id: connectorId });
  return userId === null ? query.whereNull('user_id') : query.where({ user_id: userId });
}

const binding = (row: Pick<ConnectionRow, 'connector_id' | 'user_id'>, which: 'access' | 'refresh') =>
  `connection:${row.connector_id}:${row.user_id ?? 'organization'}:${which}`;

export function openAccessToken(keyring: Keyring, row: ConnectionRow): string {
  return unseal(keyring, row.access_token!, row.key_id!, binding(row, 'access'));
}

export function openRefreshToken(keyring: Keyring, row: ConnectionRow): string | null {
  return row.refresh_token ? unseal(keyring, row.refresh_token, row.key_id!, binding(row, 'refresh')) : null;
}

/** The columns that store a token answer: sealed, a new generation, its expiry from `expires_in`. */
export function tokenColumns(
  trx: Knex,
  keyring: Keyring,
  owner: Pick<ConnectionRow, 'connector_id' | 'user_id'>,
  tokens: OAuthTokens,
  keptRefreshToken: string | null = null,
) {
  const refresh = tokens.refresh_token ?? keptRefreshToken;
  return {
    status: 'connected' as const,
    access_token: seal(keyring, tokens.access_token, binding(owner, 'access')),
    refresh_token: refresh ? seal(keyring, refresh, binding(owner, 'refresh')) : null,
    key_id: keyring.current.id,
    token_type: tokens.token_type,
    scope: tokens.scope ?? null,
    expires_at: tokens.expires_in === undefined ? null : trx.raw('now() + make_interval(secs => ?)', [tokens.expires_in]),
    token_generation: trx.raw('token_generation + 1'),
    last_error: null,
    updated_at: trx.fn.now(),
  };
}

/**
 * Stores a new connection (or replaces the subject's old one) with its first tokens; the tool list
 * cached for the member is dropped (what a server lists may depend on the grant).
 */
export async function storeConnection(
  trx: Knex.Transaction,
  keyring: Keyring,
  owner: { connector_id: string; organization_id: string; user_id: string | null },
  server: Pick<OAuthServer, 'issuer' | 'authorizationServer' | 'metadata' | 'resource'>,
  clientId: string,
  tokens: OAuthTokens,
): Promise<ConnectionRow> {
  const columns = tokenColumns(trx, keyring, owner, tokens);
  const values = {
    ...columns,
    token_generation: 1,
    issuer: server.issuer,
    authorization_server: server.authorizationServer,
    server_metadata: JSON.stringify(server.metadata),
    resource: server.resource,
    client_id: clientId,
    revoke_pending: false,
    connected_at: trx.fn.now(),
    refreshed_at: null,
    status_changed_at: trx.fn.now(),
  };
  await connectionOf(trx, owner.connector_id, owner.user_id).delete();
  const [row] = (await trx('connector_oauth_connections')
    .insert({ ...owner, ...values })
    .returning('*')) as ConnectionRow[];
  if (owner.user_id !== null) await trx('connector_tool_lists').where({ connector_id: owner.connector_id, user_id: owner.user_id }).delete();
  return row!;
}

/** A status the member sees: a connection whose token expired and cannot be refreshed shows `expired`. */
export function presentedStatus(row: ConnectionRow): ConnectionStatus {
  if (row.status === 'connected' && !row.refresh_token && row.user_id !== null && row.expires_at !== null && row.expires_at.getTime() <= Date.now())
    return 'expired';
  return row.status;
}
