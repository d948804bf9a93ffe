import type { Knex } from 'knex';
import { BOSS_SCHEMA } from '../boss.ts';
import { jobOfOrganizationSql } from '../origin.ts';

// Pauses (src/jobs/pauses.ts) push queued jobs back by moving pg-boss's `start_after`, and remember
// each job's own start in `job_deferrals` so a resume restores exactly those. pg-boss has no pause;
// its update() edits one job per call and its restore() is not fenced to an attempt, so each of
// these is one statement of ours instead (a pause may cover a backlog of 100,000 jobs).

const JOB = `${BOSS_SCHEMA}.job`;

/** How far a deferral pushes jobs: to an instant (the pause's expiry) or by a Postgres interval from now. */
export type DeferUntil = { at: Date } | { interval: string };

const untilSql = (until: DeferUntil) =>
  'at' in until ? { sql: '?::timestamptz', bindings: [until.at] } : { sql: 'now() + ?::interval', bindings: [until.interval] };

/**
 * Pushes back the queued jobs of `queue` (of one organization, when given) that a pause covers, in
 * the caller's transaction; jobs locked right now (being fetched) are left to the workers' check.
 * Returns how many moved.
 */
export async function deferQueuedJobs(
  trx: Knex.Transaction,
  pause: { id: string; queue: string; organizationId: string | null },
  until: DeferUntil,
): Promise<number> {
  const to = untilSql(until);
  const { rows } = await trx.raw(
    `WITH target AS (
       SELECT id, start_after FROM ${JOB}
        WHERE name = ? AND state IN ('created', 'retry') ${pause.organizationId ? `AND ${jobOfOrganizationSql()}` : ''}
        FOR UPDATE SKIP LOCKED
     ), moved AS (
       UPDATE ${JOB} j SET start_after = GREATEST(j.start_after, ${to.sql}) FROM target t WHERE j.name = ? AND j.id = t.id RETURNING j.id
     ), remembered AS (
       INSERT INTO job_deferrals (job_id, queue, pause_id, original_start_after)
       SELECT t.id, ?, ?, t.start_after FROM target t
       ON CONFLICT (job_id) DO NOTHING
     )
     SELECT count(*)::int AS n FROM moved`,
    [pause.queue, ...(pause.organizationId ? [pause.organizationId, pause.organizationId] : []), ...to.bindings, pause.queue, pause.queue, pause.id],
  );
  return rows[0].n as number;
}

/** Restores the start times of the jobs these pauses deferred that are still queued (or now, if that passed) and forgets them. */
export async function restoreDeferredJobs(trx: Knex.Transaction, pauseIds: readonly string[]): Promise<number> {
  const { rows } = await trx.raw(
    `WITH d AS (DELETE FROM job_deferrals WHERE pause_id = ANY(?::uuid[]) RETURNING job_id, queue, original_start_after),
          restored AS (
            UPDATE ${JOB} j SET start_after = GREATEST(d.original_start_after, now())
              FROM d WHERE j.name = d.queue AND j.id = d.job_id AND j.state IN ('created', 'retry')
            RETURNING j.id)
     SELECT count(*)::int AS n FROM restored`,
    [[...pauseIds]],
  );
  return rows[0].n as number;
}

/**
 * Puts a fetched job back untouched — `started_on` cleared, so pg-boss's next claim does not count
 * an attempt — to start at `until`, and remembers it under the pause. Fenced to the attempt
 * (`state = 'active'` and its retry_count): a job that moved on (cancelled meanwhile) is left alone.
 */
export async function deferFetchedJob(
  db: Knex | Knex.Transaction,
  job: { id: string; name: string; retryCount: number },
  pauseId: string,
  until: DeferUntil,
): Promise<boolean> {
  const to = untilSql(until);
  const { rows } = await db.raw(
    `WITH moved AS (
       UPDATE ${JOB} SET state = 'created', started_on = NULL, heartbeat_on = NULL, start_after = ${to.sql}
        WHERE name = ? AND id = ? AND state = 'active' AND retry_count = ?
        RETURNING id
     ), remembered AS (
       INSERT INTO job_deferrals (job_id, queue, pause_id, original_start_after)
       SELECT id, ?, ?, now() FROM moved
       ON CONFLICT (job_id) DO UPDATE SET pause_id = EXCLUDED.pause_id
     )
     SELECT count(*)::int AS n FROM moved`,
    [...to.bindings, job.name, job.id, job.retryCount, job.name, pauseId],
  );
  return rows[0].n === 1;
}

/**
 * "Retry now": a job waiting out its retry backoff (state `retry`, or a queued one sent to start
 * later) is made due at once, on pg-boss's clock, in the caller's transaction; the worker's slot
 * waker finds it on its next poll. A job a pause pushed back (in `job_deferrals`) is left alone —
 * resuming the pause is what releases it. Returns what happened: `started` (made due), `paused`,
 * `due` (already due, or running or finished: nothing to do).
 */
export async function startNow(trx: Knex.Transaction, queue: string, id: string): Promise<'started' | 'paused' | 'due'> {
  const { rows } = await trx.raw(
    `SELECT j.state::text AS state, j.start_after > ${BOSS_SCHEMA}.job_now() AS later, d.job_id IS NOT NULL AS paused
       FROM ${JOB} j LEFT JOIN job_deferrals d ON d.job_id = j.id
      WHERE j.name = ? AND j.id = ? FOR UPDATE OF j`,
    [queue, id],
  );
  const row = rows[0] as { state: string; later: boolean; paused: boolean } | undefined;
  if (!row || !['created', 'retry'].includes(row.state) || !row.later) return 'due';
  if (row.paused) return 'paused';
  await trx.raw(`UPDATE ${JOB} SET start_after = ${BOSS_SCHEMA}.job_now() WHERE name = ? AND id = ?`, [queue, id]);
  // Wakes a worker's slot at commit, as a new job would (the channel pg-boss and the slot waker use: ./notify.ts).
  await trx.raw(`SELECT pg_notify('pgboss_' || left(encode(sha224(?::bytea), 'hex'), 24), ?)`, [BOSS_SCHEMA, queue]);
  return 'started';
}
