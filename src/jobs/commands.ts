import { fromKnex, type PgBoss } from 'pg-boss';
import type { Tx } from '../db/knex.ts';
import { affected } from './boss.ts';
import type { JobRow } from './boss-sql/index.ts';

/** The job console's commands, each on the caller's transaction so the audit record commits with it, through pg-boss's API. */
export class JobCommands {
  constructor(private readonly boss: PgBoss) {}

  /** Failed jobs get one more attempt. Returns how many changed (jobs in another state are left alone). */
  async retryFailed(trx: Tx, queue: string, ids: readonly string[]): Promise<number> {
    return affected(await this.boss.retry(queue, [...ids], { db: fromKnex(trx) }));
  }

  /** Moves these dead letters back to the queue they failed on (pg-boss keeps their lineage). Returns how many moved. */
  async redrive(trx: Tx, deadQueue: string, ids: readonly string[]): Promise<number> {
    return this.boss.redrive(deadQueue, { ids: [...ids], limit: ids.length, db: fromKnex(trx) });
  }

  /** Cancelled jobs are queued again. Returns how many changed. */
  async resumeCancelled(trx: Tx, queue: string, ids: readonly string[]): Promise<number> {
    return affected(await this.boss.resume(queue, [...ids], { db: fromKnex(trx) }));
  }

  /** Queued or running → cancelled (a running attempt's completion then changes nothing). Returns how many changed. */
  async cancel(trx: Tx, queue: string, ids: readonly string[]): Promise<number> {
    return affected(await this.boss.cancel(queue, [...ids], { db: fromKnex(trx) }));
  }

  async remove(trx: Tx, queue: string, ids: readonly string[]): Promise<number> {
    return affected(await this.boss.deleteJob(queue, [...ids], { db: fromKnex(trx) }));
  }

  /** One job of a known queue, as the console shows it (pg-boss's getJobById), on the caller's transaction when given. */
  async job(queue: string, id: string, trx?: Tx): Promise<JobRow | undefined> {
    const job = await this.boss.getJobById<Record<string, unknown>>(queue, id, trx ? { db: fromKnex(trx) } : {});
    if (!job) return undefined;
    return {
      id: job.id,
      name: job.name,
      state: job.state,
      group_id: job.groupId ?? null,
      data: job.data ?? null,
      output: job.output ?? null,
      retry_count: job.retryCount,
      retry_limit: job.retryLimit,
      priority: job.priority,
      created_on: job.createdOn,
      start_after: job.startAfter,
      started_on: job.startedOn ?? null,
      completed_on: job.completedOn ?? null,
      dead_letter: job.deadLetter ?? null,
      source_name: job.sourceName ?? null,
      source_id: job.sourceId ?? null,
    };
  }

  /** Whether `name` is a pg-boss queue (pg-boss's getQueue). */
  async queueExists(name: string): Promise<boolean> {
    return (await this.boss.getQueue(name)) !== null;
  }
}
