import { fromKnex, type PgBoss, type SendOptions } from 'pg-boss';
import type { Tx } from '../db/knex.ts';
import type { JobDefinition, PayloadOf } from './define.ts';
import { currentRequestId, stamp } from './origin.ts';

/** Whom a job works for: every call site says so (`null` for the platform's own jobs). */
export interface EnqueueOptions extends Pick<SendOptions, 'startAfter' | 'priority' | 'id'> {
  organizationId: string | null;
}

/**
 * Sends jobs through pg-boss on the caller's own knex transaction, so a job exists exactly when
 * the state change that caused it commits (a rolled-back request leaves no job behind). Each job
 * records its organization (pg-boss's group) and the request that enqueued it (src/jobs/origin.ts).
 */
export class JobQueue {
  constructor(private readonly boss: PgBoss) {}

  /** Readiness: pg-boss's schema is installed and answering. */
  async isReady(): Promise<boolean> {
    return (await this.boss.schemaVersion()) !== null;
  }

  async enqueue<J extends JobDefinition>(trx: Tx, job: J, payload: PayloadOf<J>, { organizationId, ...options }: EnqueueOptions): Promise<string> {
    const data = stamp(job.payload.parse(payload) as object, { requestId: currentRequestId() });
    const id = await this.boss.send(job.name, data, { ...options, ...(organizationId && { group: { id: organizationId } }), db: fromKnex(trx) });
    if (!id) throw new Error(`pg-boss refused a ${job.name} job`);
    return id;
  }

  /** Many jobs of one kind in one statement (pg-boss `insert`), on the caller's transaction: for batches (the dispatcher's runs). */
  async enqueueMany<J extends JobDefinition>(trx: Tx, job: J, jobs: readonly { payload: PayloadOf<J>; organizationId: string | null }[]): Promise<void> {
    if (jobs.length === 0) return;
    const requestId = currentRequestId();
    await this.boss.insert(
      job.name,
      jobs.map(({ payload, organizationId }) => ({
        data: stamp(job.payload.parse(payload) as object, { requestId }),
        ...(organizationId && { group: { id: organizationId } }),
      })),
      { db: fromKnex(trx) },
    );
  }
}
