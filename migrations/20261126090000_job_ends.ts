import type { Knex } from 'knex';

/**
 * `job_ends`: how each job that did not simply succeed ended for its resource — failed for good,
 * expired, canceled — written by the job runtime in the same transaction as the job's own state
 * change and the resource's settlement (src/jobs/ends.ts). It is what tells the runtime's sweep
 * which failed jobs pg-boss ended on its own (an expired attempt, a lost heartbeat on the last
 * try) still need their resource settled, and it is the console's record of why work ended.
 *
 * Attempts gain the outcome `superseded`: the attempt lost its lease (cancelled, expired or
 * retried elsewhere while it ran) and wrote nothing. And an attempt is recorded when it starts
 * (`ended_at` and `outcome` NULL while it runs), so a killed attempt stays in the history with the
 * worker that really ran it.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE job_ends (
      id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      job_id uuid NOT NULL,
      queue text NOT NULL,
      organization_id text,
      -- pg-boss's retry count when the job ended.
      attempt integer NOT NULL,
      "end" text NOT NULL CHECK ("end" IN ('failed', 'expired', 'canceled')),
      reason jsonb NOT NULL,
      ended_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX job_ends_job_idx ON job_ends (job_id, ended_at);

    ALTER TABLE job_attempts DROP CONSTRAINT job_attempts_outcome_check;
    ALTER TABLE job_attempts ADD CONSTRAINT job_attempts_outcome_check
      CHECK (outcome IN ('completed', 'failed', 'deferred', 'lost', 'cancelled', 'superseded'));

    -- An attempt is written when it starts (no end, no outcome yet), so one whose worker is killed
    -- is still in the history, credited to the worker that ran it; its end fills it in.
    ALTER TABLE job_attempts ALTER COLUMN ended_at DROP NOT NULL, ALTER COLUMN outcome DROP NOT NULL;
    ALTER TABLE job_attempts ADD CONSTRAINT job_attempts_end_check CHECK ((ended_at IS NULL) = (outcome IS NULL));
    CREATE INDEX job_attempts_open_idx ON job_attempts (worker_id, job_id) WHERE ended_at IS NULL;

    -- One row per attempt (a deferral, which uses no attempt, aside): the worker's own record and a
    -- sweep's record of an attempt nobody wrote cannot both land.
    DELETE FROM job_attempts a USING job_attempts b
     WHERE a.job_id = b.job_id AND a.attempt = b.attempt AND a.id > b.id
       AND a.outcome IS DISTINCT FROM 'deferred' AND b.outcome IS DISTINCT FROM 'deferred';
    CREATE UNIQUE INDEX job_attempts_once_idx ON job_attempts (job_id, attempt) WHERE outcome IS DISTINCT FROM 'deferred';
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    DROP TABLE job_ends;
    DROP INDEX job_attempts_once_idx;
    DROP INDEX job_attempts_open_idx;
    ALTER TABLE job_attempts DROP CONSTRAINT job_attempts_end_check;
    DELETE FROM job_attempts WHERE outcome = 'superseded' OR outcome IS NULL;
    ALTER TABLE job_attempts ALTER COLUMN ended_at SET NOT NULL, ALTER COLUMN outcome SET NOT NULL;
    ALTER TABLE job_attempts DROP CONSTRAINT job_attempts_outcome_check;
    ALTER TABLE job_attempts ADD CONSTRAINT job_attempts_outcome_check
      CHECK (outcome IN ('completed', 'failed', 'deferred', 'lost', 'cancelled'));
  `);
}
