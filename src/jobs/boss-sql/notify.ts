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
