import type { Knex } from 'knex';
import { BOSS_SCHEMA } from '../boss.ts';
import { ORGANIZATION_KEY, organizationOfJobSql } from '../origin.ts';

// Attempt fencing and job ends: what the runtime reads and locks on pg-boss's job table to fence a
// worker's attempt (the row locked FOR NO KEY UPDATE, state 'active' and the attempt's retry_count)
// before it writes results, settles or charges; to end a job for good; to find the open jobs
// working on a resource; and to find failures pg-boss ended on its own. pg-boss's own commands —
// complete, fail, cancel — go through its API.

const JOB = `${BOSS_SCHEMA}.job`;

export interface LeasedJob {
  id: string;
  name: string;
  state: 'created' | 'retry' | 'active' | 'completed' | 'cancelled' | 'failed';
  retry_count: number;
  retry_limit: number;
  group_id: string | null;
  data: unknown;
}

/**
 * Locks a job's row until the caller's transaction ends (FOR NO KEY UPDATE: pg-boss's heartbeat,
 * cancel, retry and expiry all wait for it) and returns it as it now stands.
 */
export async function lockJobRow(trx: Knex.Transaction, queue: string, id: string): Promise<LeasedJob | undefined> {
  const { rows } = await trx.raw(`SELECT id, name, state, retry_count, retry_limit, group_id, data FROM ${JOB} WHERE name = ? AND id = ? FOR NO KEY UPDATE`, [
    queue,
    id,
  ]);
  return rows[0] as LeasedJob | undefined;
}

/**
 * A condition (SQL and its bindings) that holds while the attempt still owns its job — the row
 * `active` at its retry count — for a write fenced to the attempt in one statement of its own: no
 * transaction and no row lock, so only for a write that stays harmless should the lease be lost
 * right after it (marking the attempt's resource as started).
 */
export const attemptOwnsJob = (attempt: { queue: string; id: string; attempt: number }): [string, [string, string, number]] => [
  `EXISTS (SELECT 1 FROM ${JOB} WHERE name = ? AND id = ? AND state = 'active' AND retry_count = ?)`,
  [attempt.queue, attempt.id, attempt.attempt],
];

/**
 * `attemptOwnsJob` for many attempts in one statement: the condition on a row source `alias` with
 * columns `queue`, `job_id` (uuid) and `attempt` (e.g. a VALUES list of several attempts' writes).
 */
export const attemptsOwnJobsSql = (alias: string): string =>
  `EXISTS (SELECT 1 FROM ${JOB} j WHERE j.name = ${alias}.queue AND j.id = ${alias}.job_id AND j.state = 'active' AND j.retry_count = ${alias}.attempt)`;

/** No retry follows this attempt: pg-boss's next `fail` of it ends the job `failed` and copies it to its dead letters. */
export async function spendRetries(trx: Knex.Transaction, queue: string, id: string, retryCount: number): Promise<void> {
  await trx.raw(`UPDATE ${JOB} SET retry_limit = retry_count WHERE name = ? AND id = ? AND state = 'active' AND retry_count = ?`, [queue, id, retryCount]);
}

/**
 * The open jobs (queued, waiting to retry, or running) of `queue` whose payload names `value` under
 * `field` — a field the job type declared searchable, so an expression index serves the lookup.
 */
export async function openJobsNaming(db: Knex | Knex.Transaction, queue: string, field: string, value: string): Promise<string[]> {
  const { rows } = await db.raw(`SELECT id FROM ${JOB} WHERE name = ? AND data \\? ? AND data->>? = ? AND state < 'completed'`, [queue, field, field, value]);
  return (rows as { id: string }[]).map((row) => row.id);
}

export interface DeadLetter {
  /** The failed job the dead letter copies. */
  job_id: string;
  queue: string;
  attempt: number;
  organization_id: string | null;
  data: unknown;
  /** pg-boss's output of the failed attempt: `{value: {message}}` for its own timeouts, else the error. */
  output: unknown;
  /** When the job failed for good (the copy's creation). */
  dead_at: Date;
}

/**
 * Jobs of `queues` that failed for good in the last `withinSeconds` (seen through the dead-letter
 * copy pg-boss made) with no end recorded since — pg-boss ended them on its own (the attempt
 * expired, or its heartbeat stopped on the last try), so nobody has settled their resource yet.
 */
export async function unsettledDeadLetters(db: Knex, queues: readonly string[], withinSeconds: number, limit: number): Promise<DeadLetter[]> {
  if (queues.length === 0) return [];
  const { rows } = await db.raw(
    `SELECT d.source_id AS job_id, d.source_name AS queue, d.source_retry_count AS attempt, ${organizationOfJobSql('d')} AS organization_id, d.data, d.source_output AS output, d.created_on AS dead_at
       FROM ${JOB} d
      WHERE d.name = ANY(?::text[]) AND d.created_on > now() - make_interval(secs => ?) AND d.source_id IS NOT NULL
        AND NOT EXISTS (SELECT 1 FROM job_ends e WHERE e.job_id = d.source_id AND e.ended_at >= d.created_on)
      ORDER BY d.created_on
      LIMIT ?`,
    [queues.map((queue) => `${queue}.dead`), withinSeconds, limit],
  );
  return rows as DeadLetter[];
}

/**
 * Puts a stopping worker's attempt back to `created` without using an attempt (`started_on`
 * cleared, so the next claim keeps its `retry_count`), fenced to that attempt, and not claimable
 * for `heldBackSeconds` (see src/jobs/hand-back.ts for why). True when it was still the attempt's.
 */
export async function putBackAttempt(db: Knex, attempt: { queue: string; id: string; attempt: number }, heldBackSeconds: number): Promise<boolean> {
  const { rowCount } = await db.raw(
    `UPDATE ${JOB} SET state = 'created', started_on = NULL, heartbeat_on = NULL, start_after = now() + make_interval(secs => ?)
      WHERE name = ? AND id = ? AND state = 'active' AND retry_count = ?`,
    [heldBackSeconds, attempt.queue, attempt.id, attempt.attempt],
  );
  return rowCount === 1;
}

/**
 * Puts a running attempt's job back to run again after `seconds` without using one of its retries,
 * fenced to that attempt; true when it was still the attempt's. The job waits as a retry does
 * (`retry`, `started_on` kept), so the next claim counts a new attempt number: pg-boss's settle of
 * this attempt, fenced by id and retry count, can never land on that next claim, however soon it
 * comes. `retry_limit` moves up with it, so the snooze costs nothing of the retry budget.
 */
export async function snoozeAttempt(db: Knex | Knex.Transaction, attempt: { queue: string; id: string; attempt: number }, seconds: number): Promise<boolean> {
  // The next claim overwrites the claim's mark (./claims.ts): the attempt's row is written now, open,
  // for its worker's `deferred` record to replace (or, should the worker die first, the lost-worker sweep to close).
  const { rows } = await db.raw(
    `WITH snoozed AS (
       UPDATE ${JOB} SET state = 'retry', retry_limit = retry_limit + 1, heartbeat_on = NULL, start_after = now() + make_interval(secs => ?)
        WHERE name = ? AND id = ? AND state = 'active' AND retry_count = ?
        RETURNING id, name, data, group_id, retry_count, claimed_by, started_on
     ),
     opened AS (
       INSERT INTO job_attempt_records (job_id, queue, organization_id, attempt, worker_id, started_at)
       SELECT s.id, s.name, coalesce(s.data ->> '${ORGANIZATION_KEY}', s.group_id), s.retry_count, s.claimed_by, s.started_on FROM snoozed s
        WHERE s.claimed_by IS NOT NULL
          AND NOT EXISTS (SELECT 1 FROM job_attempt_records a WHERE a.job_id = s.id AND a.attempt = s.retry_count AND a.outcome IS DISTINCT FROM 'deferred')
       ON CONFLICT DO NOTHING
     )
     SELECT count(*)::int AS snoozed FROM snoozed`,
    [seconds, attempt.queue, attempt.id, attempt.attempt],
  );
  return rows[0].snoozed === 1;
}
