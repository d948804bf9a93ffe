import type { Knex } from 'knex';
import { eventually } from './eventually.ts';
import type { ApiResponse } from './server.ts';

/** Whether a session of this test's database waits on a lock (a request blocked by the test's transaction). */
async function someoneWaitsOnALock(db: Knex): Promise<boolean> {
  const { rows } = await db.raw(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`);
  return rows[0].n > 0;
}

/**
 * A change racing a request, made deterministic: `change` runs in a transaction of the test's own
 * (taking the locks the real change takes) and stays open while `request` is sent; once the
 * request waits on those locks, the change commits, and the request's answer is returned. Fails if
 * the request answers without waiting: it decided without the lock, on a state about to change.
 */
export async function whileChangeInFlight(
  db: Knex,
  change: (trx: Knex.Transaction) => Promise<void>,
  request: () => Promise<ApiResponse>,
): Promise<ApiResponse> {
  const trx = await db.transaction();
  let answer: Promise<ApiResponse> | undefined;
  try {
    await change(trx);
    answer = request();
    const early = answer.then((res) => {
      throw new Error(`answered ${res.status} without waiting for the change in flight: ${JSON.stringify(res.body)}`);
    });
    early.catch(() => undefined);
    await Promise.race([eventually('the request waits for the change in flight', () => someoneWaitsOnALock(db), { timeoutMs: 5000 }), early]);
    await trx.commit();
  } finally {
    if (!trx.isCompleted()) await trx.rollback();
  }
  return answer!;
}
