import type { Knex } from 'knex';
import type { Config } from '../config/schema.ts';
import { type JobRow, type Liveness, runningAttempts } from '../jobs/boss-sql/index.ts';
import type { Deps } from '../platform/deps.ts';
import { presentJob } from './presenter.ts';

// Stuck attempts: a job running longer than its kind's `expectedSeconds` while a live worker holds
// it. A dead worker's attempt is not stuck but lost (the lost-worker sweep and pg-boss's heartbeat
// retry it); "live" is the workers page's own measure, a heartbeat within WORKER_LOST_AFTER_SECONDS.

export const liveness = (config: Pick<Config, 'WORKER_LOST_AFTER_SECONDS'>): Liveness => ({ liveWithinSeconds: config.WORKER_LOST_AFTER_SECONDS });

/** Jobs as the console shows them, the running ones timed against their kind's expected time (one query for the page). */
export async function presentJobs(db: Knex | Knex.Transaction, deps: Pick<Deps, 'config' | 'jobs'>, rows: readonly JobRow[]) {
  const active = rows.filter((row) => row.state === 'active').map((row) => row.id);
  const running = new Map((await runningAttempts(db, active, liveness(deps.config))).map((attempt) => [attempt.id, attempt] as const));
  return rows.map((row) => presentJob(row, deps.jobs.definition(row.name), running.get(row.id)));
}
