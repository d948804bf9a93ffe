import { fromKnex, type PgBoss, type SendOptions } from 'pg-boss';
import type { Tx } from '../db/knex.ts';
import type { JobDefinition, PayloadOf } from './define.ts';

/**
 * Sends jobs through pg-boss on the caller's own knex transaction, so a job exists exactly when
 * the state change that caused it commits (a rolled-back request leaves no job behind).
 */
export class JobQueue {
  constructor(private readonly boss: PgBoss) {}

  /** Readiness: pg-boss's schema is installed and answering. */
  async isReady(): Promise<boolean> {
    return (await this.boss.schemaVersion()) !== null;
  }

  async enqueue<J extends JobDefinition>(
    trx: Tx,
    job: J,
    payload: PayloadOf<J>,
    options: Pick<SendOptions, 'singletonKey' | 'startAfter' | 'priority' | 'id'> = {},
  ): Promise<string> {
    const data = job.payload.parse(payload) as object;
    const id = await this.boss.send(job.name, data, { ...options, db: fromKnex(trx) });
    if (!id) throw new Error(`pg-boss refused a ${job.name} job (singleton already queued?)`);
    return id;
  }

  /** Many jobs of one kind in one statement (pg-boss `insert`), on the caller's transaction: for batches (the dispatcher's runs). */
  async enqueueMany<J extends JobDefinition>(trx: Tx, job: J, payloads: readonly PayloadOf<J>[]): Promise<void> {
    if (payloads.length === 0) return;
    await this.boss.insert(
      job.name,
      payloads.map((payload) => ({ data: job.payload.parse(payload) as object })),
      { db: fromKnex(trx) },
    );
  }
}
