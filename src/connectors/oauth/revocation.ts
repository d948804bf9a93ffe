// Revoking connections: unusable from this transaction's commit on (status `revoked`), their tokens
// kept sealed until connectionRevocationJob revoked them at the server and erased them.
import type { Knex } from 'knex';
import type { JobQueue } from '../../jobs/enqueue.ts';
import type { ConnectionRow } from './connections.ts';
import { connectionRevocationJob } from './jobs.ts';

/** Marks the connections `revoked` (tokens kept sealed until the job revoked them at the server) and enqueues that job for each. */
export async function revokeConnections(trx: Knex.Transaction, jobs: JobQueue, rows: Knex.QueryBuilder): Promise<ConnectionRow[]> {
  const revoked = (await rows
    .whereNot({ status: 'revoked' })
    .update({ status: 'revoked', revoke_pending: trx.raw('access_token IS NOT NULL'), status_changed_at: trx.fn.now(), updated_at: trx.fn.now() })
    .returning('*')) as ConnectionRow[];
  for (const row of revoked)
    if (row.revoke_pending) await jobs.enqueue(trx, connectionRevocationJob, { connection_id: row.id }, { organizationId: row.organization_id });
  return revoked;
}
