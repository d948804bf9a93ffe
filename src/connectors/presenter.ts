import { presentLifecycle } from '../access/index.ts';
import type { z } from '../core/zod.ts';
import type { authSchemes, connectorCredentialSchema, connectorSchema, connectorTypes } from './schema.ts';

export interface ConnectorRow {
  id: string;
  organization_id: string;
  type: (typeof connectorTypes)[number];
  name: string;
  url: string | null;
  auth_scheme: (typeof authSchemes)[number];
  needs_approval: boolean;
  /** Tools of the connector (their names on its server) that need approval even when `needs_approval` is off. */
  approval_tools: string[];
  created_by_id: string | null;
  deleted_at: Date | null;
  deleted_by_id: string | null;
  created_at: Date;
  updated_at: Date;
}

/** What the API shows of a user's credential: never the secret (nor its ciphertext or key id). */
export interface CredentialStatus {
  connector_id: string;
  last4: string | null;
  updated_at: Date | null;
  set: boolean;
}

export function presentConnector(row: ConnectorRow): z.input<typeof connectorSchema> {
  return {
    id: row.id,
    organization_id: row.organization_id,
    type: row.type,
    name: row.name,
    url: row.url,
    auth_scheme: row.auth_scheme,
    needs_approval: row.needs_approval,
    approval_tools: row.approval_tools,
    created_by_id: row.created_by_id,
    ...presentLifecycle(row),
  };
}

export function presentCredential(status: CredentialStatus): z.input<typeof connectorCredentialSchema> {
  return {
    connector_id: status.connector_id,
    set: status.set,
    last4: status.set ? status.last4 : null,
    updated_at: status.updated_at?.toISOString() ?? null,
  };
}
