import type { Knex } from 'knex';
import { BOSS_SCHEMA } from '../boss.ts';
import { jobOfOrganizationSql, organizationOfJobSql } from '../origin.ts';

// Running attempts: how long each has run against its kind's expected time (job_kinds), which live
// worker reports holding it (job_workers), and the attempts whose pg-boss heartbeat went stale. Running
// jobs are few, and every statement here reaches them through the console's active index
// (job_ops_active_i: `WHERE state = 'active'`), never through the rest of the job table.

const JOB = `${BOSS_SCHEMA}.job`;

/** Which workers count as live: not stopped, not marked lost, heartbeat within this many seconds (WORKER_LOST_AFTER_SECONDS). */
export interface Liveness {
  liveWithinSeconds: number;
}

/** A running attempt, timed against its kind's expectation. */
export interface RunningAttempt {
  id: string;
  name: string;
  /** The job's organization (organizationOfJob), not necessarily its pg-boss group. */
  group_id: string | null;
  retry_count: number;
  started_on: Date;
  running_for_seconds: number;
  /** The kind's expected attempt time; null for a queue no release recorded. */
  expected_seconds: number | null;
  /** The live worker whose heartbeat lists this very attempt; null when none does (yet, or any more). */
  worker_id: string | null;
  /** Past its expected time while a live worker holds it. */
  stuck: boolean;
}

/**
 * The live worker holding attempt `<alias>` (by its last heartbeat's in_flight), as a LATERAL. A
 * worker whose heartbeat went silent is the lost-worker path, not a stuck attempt.
 */
const holder = (alias: string) => `
  SELECT w.id FROM job_workers w
   WHERE w.stopped_at IS NULL AND w.lost_at IS NULL AND w.last_heartbeat_at >= now() - make_interval(secs => ?)
     AND w.in_flight @> jsonb_build_array(jsonb_build_object('job_id', ${alias}.id, 'attempt', ${alias}.retry_count))
   LIMIT 1`;

const pastExpected = (alias: string) => `${alias}.started_on < now() - make_interval(secs => k.expected_seconds)`;

function selectRunning(db: Knex | Knex.Transaction, where: string, bindings: readonly Knex.Value[], liveness: Liveness) {
  return db.raw(
    `SELECT j.id, j.name, ${organizationOfJobSql('j')} AS group_id, j.retry_count, j.started_on,
            extract(epoch FROM now() - j.started_on)::float8 AS running_for_seconds,
            k.expected_seconds, h.id AS worker_id,
            (h.id IS NOT NULL AND k.expected_seconds IS NOT NULL AND ${pastExpected('j')}) AS stuck
       FROM ${JOB} j
       LEFT JOIN job_kinds k ON k.queue = j.name
       LEFT JOIN LATERAL (${holder('j')}) h ON true
      WHERE j.state = 'active' AND j.started_on IS NOT NULL AND ${where}
      ORDER BY j.started_on, j.id`,
    [liveness.liveWithinSeconds, ...bindings],
  );
}

/** The running ones among `ids` (a console page), with their timing; jobs not running are left out. */
export async function runningAttempts(db: Knex | Knex.Transaction, ids: readonly string[], liveness: Liveness): Promise<RunningAttempt[]> {
  if (ids.length === 0) return [];
  const { rows } = await selectRunning(db, 'j.id = ANY(?::uuid[])', [ids as string[]], liveness);
  return rows as RunningAttempt[];
}

/** Every stuck attempt (one organization's, or all), longest-running first. */
export async function stuckAttempts(db: Knex | Knex.Transaction, options: Liveness & { organizationId: string | null }): Promise<RunningAttempt[]> {
  const org = options.organizationId ? ` AND ${jobOfOrganizationSql('j')}` : '';
  const { rows } = await selectRunning(
    db,
    `k.expected_seconds IS NOT NULL AND ${pastExpected('j')} AND h.id IS NOT NULL${org}`,
    options.organizationId ? [options.organizationId, options.organizationId] : [],
    options,
  );
  return rows as RunningAttempt[];
}

/**
 * The console's `stuck=true` filter, as a condition on the job table of a job-list query (unaliased,
 * so its columns are `job.*`): running, past its kind's expected time, held by a live worker.
 */
export function stuckCondition(liveness: Liveness): { sql: string; bindings: Knex.Value[] } {
  return {
    sql: `job.state = 'active'
      AND EXISTS (SELECT 1 FROM job_kinds k WHERE k.queue = job.name AND ${pastExpected('job')})
      AND EXISTS (${holder('job')})`,
    bindings: [liveness.liveWithinSeconds],
  };
}

/** A running attempt whose pg-boss heartbeat is older than its queue's `heartbeat_seconds`: its worker is gone or frozen. */
export interface SilentAttempt {
  id: string;
  name: string;
  /** The job's organization (organizationOfJob), not necessarily its pg-boss group. */
  group_id: string | null;
  retry_count: number;
  started_on: Date;
  heartbeat_on: Date;
  heartbeat_seconds: number;
  /** The worker whose claim marked it (./claims.ts), if one did. */
  claimed_by: string | null;
}

/**
 * The attempts pg-boss's monitor would fail for a stale heartbeat — the very condition of its
 * failJobsByHeartbeat (plans.js), on its clock (job_now()) — read without the monitor's whole-table
 * stats pass, so the workers can check it on every registry heartbeat (src/jobs/worker-registry.ts).
 */
export async function silentAttempts(db: Knex | Knex.Transaction): Promise<SilentAttempt[]> {
  const { rows } = await db.raw(
    `SELECT id, name, ${organizationOfJobSql()} AS group_id, retry_count, started_on, heartbeat_on, heartbeat_seconds, claimed_by
       FROM ${JOB}
      WHERE state = 'active' AND heartbeat_seconds IS NOT NULL
        AND (heartbeat_on + heartbeat_seconds * interval '1s') < ${BOSS_SCHEMA}.job_now()
      ORDER BY heartbeat_on
      LIMIT 500`,
  );
  return rows as SilentAttempt[];
}
