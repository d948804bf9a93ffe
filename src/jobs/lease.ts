import type { Knex } from 'knex';
import { LeaseLost } from './define.ts';
import { type LeasedJob, lockJobRow } from './boss-sql/index.ts';

/** The attempt a worker fetched: pg-boss's job id and retry count together are its fencing token. */
export interface AttemptToken {
  queue: string;
  id: string;
  attempt: number;
}

/**
 * An attempt's hold on its job. Every write the attempt makes — a step, its result, its failure —
 * runs in a transaction that first locks the job's row and checks that it is still `active` at this
 * retry count. A worker that lost its lease (frozen past its heartbeat, partitioned, its job
 * cancelled or retried elsewhere) therefore cannot write results, settle or charge: it gets
 * LeaseLost, and whoever holds the job now is the only writer.
 */
export class Lease {
  private readonly db: Knex;
  readonly token: AttemptToken;
  constructor(db: Knex, token: AttemptToken) {
    this.db = db;
    this.token = token;
  }

  /** Locks the job row for `trx` and checks the lease; throws LeaseLost when it is gone. */
  async hold(trx: Knex.Transaction): Promise<LeasedJob> {
    const job = await lockJobRow(trx, this.token.queue, this.token.id);
    if (job?.state !== 'active' || job.retry_count !== this.token.attempt) throw new LeaseLost(this.token, job?.state ?? null);
    return job;
  }

  /** `work` in one transaction under the lease. */
  step<T>(work: (trx: Knex.Transaction) => Promise<T>): Promise<T> {
    return this.db.transaction(async (trx) => {
      await this.hold(trx);
      return work(trx);
    });
  }
}
