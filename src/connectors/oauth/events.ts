// `connector.connection.changed`: a connection was made, refused (needs re-consent, expired) or
// revoked. Organization-level (those holding connectors.manage see it); it never carries a token.
import type { Knex } from 'knex';
import { recordEvent } from '../../core/events.ts';
import type { ConnectorRow } from '../presenter.ts';
import type { ConnectionRow } from './connections.ts';
import { presentConnection } from './presenter.ts';

export async function announceConnection(trx: Knex.Transaction, connector: ConnectorRow, row: ConnectionRow): Promise<void> {
  await recordEvent(trx, {
    organizationId: connector.organization_id,
    type: 'connector.connection.changed',
    subject: null,
    object: { ...presentConnection(connector.id, row), connector_name: connector.name, user_id: row.user_id },
  });
}
