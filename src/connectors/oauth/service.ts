// A member's view of their connection (never a token), disconnecting, and what a membership's end
// does to the member's connections.
import type { Knex } from 'knex';
import type { Actor } from '../../access/index.ts';
import { recordActivity } from '../../core/activity.ts';
import { conflict } from '../../core/errors.ts';
import { inTransaction } from '../../db/transaction.ts';
import type { JobQueue } from '../../jobs/enqueue.ts';
import type { Deps, MemberRemovedListener } from '../../platform/deps.ts';
import type { ConnectorRow } from '../presenter.ts';
import { getConnector, MANAGE_CONNECTORS } from '../service.ts';
import { requireOAuthConnector } from './authorize.ts';
import { configureClient, storedClient, type OAuthClientRow } from './client.ts';
import { connectionOf, type ConnectionRow } from './connections.ts';
import { type ConnectionView, presentConnection } from './presenter.ts';
import { announceConnection } from './events.ts';
import { revokeConnections } from './revocation.ts';

/** The connection this caller's turns use: their own, or for client credentials the organization's. */
const subjectFor = (connector: ConnectorRow, userId: string) => (connector.auth_scheme === 'oauth_client_credentials' ? null : userId);

/** GET /connectors/{connector_id}/oauth/connection: any member, about the connection their turns use. */
export async function getConnection(deps: Pick<Deps, 'db'>, actor: Actor, connectorId: string): Promise<ConnectionView> {
  const connector = await getConnector(deps, actor, connectorId);
  if (connector.auth_scheme !== 'oauth' && connector.auth_scheme !== 'oauth_client_credentials')
    throw conflict(`auth_scheme: the connector's auth_scheme is ${connector.auth_scheme}: it has no OAuth connection`, ['auth_scheme']);
  const row = (await connectionOf(deps.db, connector.id, subjectFor(connector, actor.userId)).first()) as ConnectionRow | undefined;
  return presentConnection(connector.id, row);
}

/**
 * DELETE /connectors/{connector_id}/oauth/connection: the caller's own connection (for client
 * credentials the organization's, by a `connectors.manage` holder) is revoked now — no turn uses
 * it from this commit on — and a job revokes its tokens at the server and erases them.
 */
export async function disconnect(deps: Pick<Deps, 'db' | 'jobs'>, actor: Actor, connectorId: string): Promise<void> {
  const connector = await getConnector(deps, actor, connectorId);
  const subject = subjectFor(connector, actor.userId);
  if (subject === null) await actor.member(connector.organization_id, MANAGE_CONNECTORS);
  await inTransaction(deps.db, async (trx) => {
    const revoked = await revokeConnections(trx, deps.jobs, connectionOf(trx, connector.id, subject));
    if (revoked.length) await recordChange(trx, connector, actor.userId, 'connector_connection.revoked', revoked[0]!, { reason: 'disconnected' });
  });
}

/** `Deps.memberRemoved`: a member who leaves the organization keeps no connection to its connectors. */
export function revokeConnectionsOfRemovedMember(jobs: JobQueue): MemberRemovedListener {
  return async (trx, { organizationId, userId }) => {
    const revoked = await revokeConnections(trx, jobs, trx('connector_oauth_connections').where({ organization_id: organizationId, user_id: userId }));
    for (const row of revoked) {
      const connector = (await trx('connectors').where({ id: row.connector_id }).first()) as ConnectorRow;
      await announceConnection(trx, connector, row);
    }
    const counts: Record<string, number> = {};
    if (revoked.length) counts.connector_connections_revoked = revoked.length;
    return counts;
  };
}

async function recordChange(
  trx: Knex.Transaction,
  connector: ConnectorRow,
  actorId: string,
  action: string,
  row: ConnectionRow,
  data: Record<string, unknown>,
) {
  await recordActivity(trx, { organizationId: connector.organization_id, actorId, action, subjectType: 'connector', subjectId: connector.id, data });
  await announceConnection(trx, connector, row);
}

// ——— the connector's OAuth client (admins) ———

export async function getOAuthClient(deps: Pick<Deps, 'db'>, actor: Actor, connectorId: string): Promise<OAuthClientRow | undefined> {
  const connector = await getConnector(deps, actor, connectorId);
  await actor.member(connector.organization_id, MANAGE_CONNECTORS);
  return storedClient(deps.db, connector.id);
}

/** PUT /connectors/{connector_id}/oauth/client: an admin sets the pre-registered client (its secret never shown again). */
export async function setOAuthClient(
  deps: Pick<Deps, 'config' | 'db'>,
  actor: Actor,
  connectorId: string,
  input: { client_id: string; client_secret?: string | null | undefined; scope?: string | null | undefined },
): Promise<OAuthClientRow> {
  const connector = await getConnector(deps, actor, connectorId);
  await actor.member(connector.organization_id, MANAGE_CONNECTORS);
  if (connector.auth_scheme !== 'oauth') requireOAuthConnector(connector, 'oauth_client_credentials');
  if (connector.deleted_at) throw conflict('the connector is deleted');
  return inTransaction(deps.db, async (trx) => {
    const row = await configureClient(deps, trx, connector.id, input);
    await recordActivity(trx, {
      organizationId: connector.organization_id,
      actorId: actor.userId,
      action: 'connector_oauth_client.set',
      subjectType: 'connector',
      subjectId: connector.id,
      data: { client_id: input.client_id },
    });
    return row;
  });
}

/** DELETE /connectors/{connector_id}/oauth/client: back to dynamic registration. */
export async function deleteOAuthClient(deps: Pick<Deps, 'db'>, actor: Actor, connectorId: string): Promise<void> {
  const connector = await getConnector(deps, actor, connectorId);
  await actor.member(connector.organization_id, MANAGE_CONNECTORS);
  await deps.db('connector_oauth_clients').where({ connector_id: connector.id, source: 'configured' }).delete();
}
