import type { Knex } from 'knex';
import type { PgBoss } from 'pg-boss';
import { putBackAttempt } from './boss-sql/index.ts';
import type { HeldJob } from './worker-registry.ts';

/**
 * A stopping worker hands back the attempts still running after its grace: each job goes back to
 * `created` without using an attempt (`started_on` cleared, so the next claim keeps its
 * `retry_count`), fenced to this worker's attempt. In two steps, because the next claim carries the
 * same `retry_count`, so pg-boss's fence could not tell it from ours: first the job is put back but
 * not yet claimable, so the settle this worker's pg-boss still makes when its handler is aborted
 * finds nothing; then it is offered again. Should the worker die between the steps, the job becomes
 * claimable by itself after `HELD_BACK_SECONDS`.
 */
const HELD_BACK_SECONDS = 30;

/** Puts the attempts back to `created`, not claimable yet. Returns those that were still this worker's. */
export async function handBack(db: Knex, attempts: readonly HeldJob[]): Promise<HeldJob[]> {
  const handedBack: HeldJob[] = [];
  for (const attempt of attempts)
    if (await putBackAttempt(db, { queue: attempt.queue, id: attempt.job_id, attempt: attempt.attempt }, HELD_BACK_SECONDS)) handedBack.push(attempt);
  return handedBack;
}

/** Makes handed-back jobs claimable now (the database's now); pg-boss notifies the workers listening on their queues. */
export async function offerAgain(boss: PgBoss, handedBack: readonly HeldJob[]): Promise<void> {
  for (const job of handedBack) await boss.update(job.queue, undefined, { id: job.job_id, startAfter: 0 });
}
