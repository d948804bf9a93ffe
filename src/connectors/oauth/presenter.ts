// What the API shows of a connection and of a connector's OAuth client: never a token or a secret.
import type { OAuthClientRow } from './client.ts';
import { type ConnectionRow, type ConnectionStatus, presentedStatus } from './connections.ts';

export interface ConnectionView {
  connector_id: string;
  status: ConnectionStatus | 'not_connected';
  scope: string | null;
  expires_at: string | null;
  connected_at: string | null;
  refreshed_at: string | null;
  status_changed_at: string | null;
  last_error: string | null;
}

export function presentConnection(connectorId: string, row: ConnectionRow | undefined): ConnectionView {
  return {
    connector_id: connectorId,
    status: row ? presentedStatus(row) : 'not_connected',
    scope: row?.scope ?? null,
    expires_at: row?.expires_at?.toISOString() ?? null,
    connected_at: row?.connected_at.toISOString() ?? null,
    refreshed_at: row?.refreshed_at?.toISOString() ?? null,
    status_changed_at: row?.status_changed_at.toISOString() ?? null,
    last_error: row?.last_error ?? null,
  };
}

export interface OAuthClientView {
  connector_id: string;
  source: 'configured' | 'registered' | null;
  client_id: string | null;
  secret_set: boolean;
  scope: string | null;
  redirect_uri: string;
  updated_at: string | null;
}

export function presentClient(connectorId: string, row: OAuthClientRow | undefined, redirectUri: string): OAuthClientView {
  return {
    connector_id: connectorId,
    source: row?.source ?? null,
    client_id: row?.client_id ?? null,
    secret_set: Boolean(row?.client_secret),
    scope: row?.scope ?? null,
    redirect_uri: redirectUri,
    updated_at: row?.updated_at.toISOString() ?? null,
  };
}
