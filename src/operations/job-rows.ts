import type { Knex } from 'knex';
import { badRequest, unavailable } from '../core/errors.ts';
import type { JobFilter } from './schema.ts';

// The bounds every console read of the job table runs within: a time window on created_on and the
// console's statement timeout. The reads themselves are in src/jobs/boss-sql/job-reads.ts.

export type { JobRow } from '../jobs/boss-sql/index.ts';

export const MAX_WINDOW_DAYS = 31;

/** The filter's time window: default the `defaultDays` (one) before `to` (default now); at most 31 days. */
export function windowOf(filter: Pick<JobFilter, 'from' | 'to'>, now = new Date(), defaultDays = 1): { from: Date; to: Date } {
  const to = filter.to ? new Date(filter.to) : now;
  const from = filter.from ? new Date(filter.from) : new Date(to.getTime() - defaultDays * 24 * 3600_000);
  if (from >= to) throw badRequest('from: must be before to', ['from']);
  if (to.getTime() - from.getTime() > MAX_WINDOW_DAYS * 24 * 3600_000) throw badRequest(`from: the window may span at most ${MAX_WINDOW_DAYS} days`, ['from']);
  return { from, to };
}

/**
 * Runs `work` in a read-only transaction under the console's statement timeout; a query the
 * timeout ends answers 503 naming what to narrow, instead of holding the database.
 */
export async function withinTimeout<T>(db: Knex, timeoutMs: number, work: (trx: Knex.Transaction) => Promise<T>): Promise<T> {
  try {
    return await db.transaction(
      async (trx) => {
        await trx.raw(`SET LOCAL statement_timeout = ${Math.floor(timeoutMs)}`);
        return work(trx);
      },
      { readOnly: true },
    );
  } catch (error) {
    if ((error as { code?: string }).code === '57014')
      throw unavailable(`the query ran past the console's statement timeout (${timeoutMs} ms): narrow the time window or add filters`);
    throw error;
  }
}
