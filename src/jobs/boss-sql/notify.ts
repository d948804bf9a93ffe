import type { Knex } from 'knex';
import { BOSS_SCHEMA } from '../boss.ts';

/**
 * The channel pg-boss NOTIFYs when a job lands on a notify-enabled queue (its payload: the queue's
 * name), as pg-boss derives it from its schema (plans.notifyChannelSql). The worker LISTENs on it
 * itself (src/jobs/slots.ts) to wake one idle slot per job instead of every slot of the queue.
 */
export async function queueNotifyChannel(db: Knex): Promise<string> {
  const { rows } = await db.raw(`SELECT ('pgboss_' || left(encode(sha224(?::bytea), 'hex'), 24)) AS channel`, [BOSS_SCHEMA]);
  return (rows[0] as { channel: string }).channel;
}

/**
 * Tells the workers' slot waker that `jobs` more jobs of `queue` landed (at commit): pg-boss's
 * batch insert NOTIFYs once whatever its size, so without this only one slot per worker would wake
 * for a batch (JSON payload `{key, jobs}`: the waker wakes that many slots, or owes them).
 */
export async function notifyBatch(trx: Knex.Transaction, queue: string, jobs: number): Promise<void> {
  await trx.raw(`SELECT pg_notify('pgboss_' || left(encode(sha224(?::bytea), 'hex'), 24), ?)`, [BOSS_SCHEMA, JSON.stringify({ key: queue, jobs })]);
}
