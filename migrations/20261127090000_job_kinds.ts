import type { Knex } from 'knex';

/**
 * `job_kinds`: what each job kind declares about its attempts beyond pg-boss's queue policy — for
 * now how long one usually takes (`expectedSeconds` of defineJob). Written by `release` with the
 * queues' policies (src/jobs/boss.ts ensureQueues), so every process — the web process's console
 * and /metrics, which do not load every kind a worker may run — can tell a running attempt that is
 * past its kind's expected time (stuck) from one that is not.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE job_kinds (
      queue text PRIMARY KEY,
      expected_seconds double precision NOT NULL CHECK (expected_seconds > 0),
      updated_at timestamptz NOT NULL DEFAULT now()
    );
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE job_kinds');
}
