import type { Knex } from 'knex';
import type { PgBoss } from 'pg-boss';
import { BOSS_SCHEMA } from '../boss.ts';
import { ORGANIZATION_KEY } from '../origin.ts';
import { fairShareFetch } from './fair-share.ts';

// Claims that record their attempt: a worker's fetch marks each job it claims with the worker
// (`claimed_by`, a column of ours on pg-boss's job table) in pg-boss's own UPDATE, and the history
// (the `job_attempts` view) shows every attempt from that mark until its row is written: at its end,
// by its worker, in batches, off the slot's critical path (fetch → handler → complete). The fetch
// stays one plain UPDATE: measured with bench:job-throughput (load ≈ 9–16, 4 rounds each), the
// start INSERTed by the fetch statement 0.69–0.77× raw pg-boss, the fetch wrapped in a CTE with an
// INSERT that writes nothing (a retry's previous attempt) 0.67×, the mark alone 0.96×: the cost
// was the statement, not the row, and every slot pays its fetch before each job.
//
// What the mark cannot show once pg-boss moves on is written down before it does: pg-boss's fail
// (which deletes the job and re-inserts it, naming each column it keeps) is rewritten to keep the
// mark and to write the failed attempt's row, still open, for its worker to end (or the sweep
// that declares that worker lost) — so a retry's claim, which overwrites the mark, loses nothing.
// Fails are off the path of a job that succeeds.

const JOB = `${BOSS_SCHEMA}.job`;

/** pg-boss's fetch (plans.fetchNextJob): one UPDATE that marks the jobs it picked active and returns them. */
const FETCH = new RegExp(
  `^\\s*WITH[\\s\\S]*\\bUPDATE ${BOSS_SCHEMA}\\.\\w+ j SET\\s+state = 'active',\\s+started_on = ${BOSS_SCHEMA}\\.job_now\\(\\),[\\s\\S]*\\bRETURNING j\\.id, name, data, retry_count as "retryCount", [^;]*"groupId"[^;]*$`,
);
/** Where the fetch's UPDATE sets its columns: the claim's mark goes first. */
const FETCH_SET = new RegExp(`(\\bUPDATE ${BOSS_SCHEMA}\\.\\w+ j SET\\s+)(state = 'active',)`);
/** The queue a fetch reads (pg-boss inlines it). */
const FETCHED_QUEUE = /\bj\.name = '([^']+)'/;
/** pg-boss's fail (plans.failJobsBody, under every fail: by id, by timeout, by heartbeat): its first CTE deletes the jobs it fails. */
const FAIL = new RegExp(`\\bdeleted_jobs AS \\(\\s*DELETE FROM ${BOSS_SCHEMA}\\.\\w+\\b[^()]*(?:\\([^()]*\\)[^()]*)*\\bRETURNING \\*\\s*\\),`);
/** Each re-insert of the deleted job under its own id (a column list from `id` to `source_root_id`, selected from `deleted_jobs`). */
const FAIL_REINSERT = new RegExp(
  `(INSERT INTO ${BOSS_SCHEMA}\\.\\w+ \\(\\s*id,[^()]*?\\bsource_root_id)(\\s*\\)\\s*SELECT\\s+id,[\\s\\S]*?\\bsource_root_id)(\\s+FROM deleted_jobs\\b)`,
  'g',
);

/** The column a recorded claim adds to each job it returns (the runtime then writes no start of its own). */
export const CLAIM_RECORDED = 'attemptRecorded';
/** The column with the claim's start (pg-boss's `started_on`): the attempt's `started_at` in the history. */
export const CLAIM_STARTED = 'claimStartedOn';

/**
 * pg-boss's fail, extended to keep the claim's mark through its re-insert and to write the row of
 * each running attempt it fails (open, credited to the worker the mark names) unless one exists;
 * null for any other statement.
 */
export function failKeepingClaims(text: string): string | null {
  if (!FAIL.test(text)) return null;
  const kept = text.replace(FAIL_REINSERT, '$1, claimed_by$2, claimed_by$3');
  if (kept === text) return null;
  return kept.replace(
    FAIL,
    (deleted) => `${deleted}
    failed_attempts AS (
      INSERT INTO job_attempt_records (job_id, queue, organization_id, attempt, worker_id, started_at)
      SELECT d.id, d.name, coalesce(d.data ->> '${ORGANIZATION_KEY}', d.group_id), d.retry_count, d.claimed_by, d.started_on
        FROM deleted_jobs d
       WHERE d.state = 'active' AND d.claimed_by IS NOT NULL AND d.started_on IS NOT NULL
         AND NOT EXISTS (SELECT 1 FROM job_attempt_records a WHERE a.job_id = d.id AND a.attempt = d.retry_count AND a.outcome IS DISTINCT FROM 'deferred')
      ON CONFLICT DO NOTHING
    ),`,
  );
}

/**
 * pg-boss's fetch of one of `queues`, extended to mark each job it claims as `workerId`'s (so the
 * history shows the attempt, credited to that worker, from the claim on) and to return the job's
 * retry limit and start; pg-boss's fail, as `failKeepingClaims`; null for any other statement.
 * The fetch is otherwise pg-boss's own — its locking, ordering and group limits — and stays one
 * UPDATE.
 */
export function claimRecordingAttempts(
  text: string,
  values: unknown[] | undefined,
  workerId: string,
  queues?: ReadonlySet<string>,
  fair?: FairShare,
): { text: string; values: unknown[]; queue?: string; fair?: true } | null {
  const params = values ?? [];
  const fail = failKeepingClaims(text);
  if (fail) return { text: fail, values: params };
  if (!FETCH.test(text) || !FETCH_SET.test(text)) return null;
  const queue = FETCHED_QUEUE.exec(text)?.[1];
  if (queues && (!queue || !queues.has(queue))) return null;
  // A queue shared between organizations by weight: the fetch picks the organization first (./fair-share.ts).
  const shared = queue && fair?.queues.has(queue) ? fairShareFetch(text, fair.cap) : null;
  const fetch = shared ?? text;
  const worker = `$${params.length + 1}::uuid`;
  const marked = fetch.replace(FETCH_SET, (_, update: string, state: string) => `${update}claimed_by = ${worker}, ${state}`);
  // The job row's retry limit comes back too: a snooze raises it, so the kind's policy may understate it.
  const returning = [
    ...(/"retryLimit"/.test(text) ? [] : ['j.retry_limit as "retryLimit"']),
    `j.started_on as "${CLAIM_STARTED}"`,
    `true AS "${CLAIM_RECORDED}"`,
  ];
  return {
    text: marked.replace(/\bRETURNING j\.id, /, `RETURNING ${returning.join(', ')}, j.id, `),
    values: [...params, workerId],
    ...(queue && { queue }),
    ...(shared && { fair: true as const }),
  };
}

/** The queues whose fetches share them between organizations by weight (./fair-share.ts), and the optional cap per organization. */
export interface FairShare {
  queues: ReadonlySet<string>;
  /** JOB_ORGANIZATION_CONCURRENCY: jobs one organization may run at once on a queue across the fleet; null: none. */
  cap: number | null;
}

/**
 * Makes every fetch of `queues` by this pg-boss instance (a worker's) a claim that marks its jobs
 * as `workerId`'s, and every fail keep the mark; pg-boss's own internal queues, which no runtime
 * runs, are left as they are.
 */
export function recordClaims(boss: PgBoss, workerId: string, queues: readonly string[], seen?: (fetch: FetchSeen) => void, fair?: FairShare): void {
  const db = boss.getDb();
  const execute = db.executeSql.bind(db);
  const runs = new Set(queues);
  db.executeSql = async (text: string, values?: unknown[]) => {
    const claim = claimRecordingAttempts(text, values, workerId, runs, fair);
    if (!claim) {
      // pg-boss puts back what a fetch took beyond a group's share of this worker: that group's jobs wait for one of its slots to end.
      if (seen && RESTORE.test(text) && typeof values?.[0] === 'string' && runs.has(values[0]))
        seen({ queue: values[0], startedAt: Date.now(), limited: true, found: 0, restored: true });
      return execute(text, values);
    }
    const { queue } = claim;
    if (!seen || !queue) return execute(claim.text, claim.values);
    const startedAt = Date.now();
    const result = await execute(claim.text, claim.values);
    // A fair claim leaves organizations out only at the cap.
    const limited = claim.fair ? fair?.cap != null : GROUP_LIMITED.test(text);
    seen({ queue, startedAt, limited, found: result?.rows?.length ?? 0 });
    return result;
  };
}

/** One fetch of a worker's queue, as the slot waker (../slots.ts) learns from it whether work may be left. */
export interface FetchSeen {
  queue: string;
  /** When it was sent (Date.now()): it sees every job committed before. */
  startedAt: number;
  /** pg-boss left some groups' jobs out (a group at its limit: this worker's share, or the fleet's group concurrency), so finding nothing does not mean nothing is waiting. */
  limited: boolean;
  /** How many jobs it claimed. */
  found: number;
  /** Not a fetch: pg-boss put jobs it had fetched back (beyond a group's share of this worker). */
  restored?: true;
}

/** pg-boss's restore (plans.restoreJobs), by which a worker puts back jobs it fetched beyond a group's local limit. */
const RESTORE = new RegExp(`^\\s*UPDATE ${BOSS_SCHEMA}\\.\\w+\\s+SET state = 'created',\\s+started_on = NULL,`);

/** A fetch that leaves groups out (plans.fetchNextJob: `ignoreGroups`, or a `groupConcurrency` count). */
const GROUP_LIMITED = /\bj\.group_id <> ALL\(|\bactive_group_/;

/** A pg-boss database (e.g. `fromKnex(trx)`) whose fails keep the claim's mark (`failKeepingClaims`). */
export function keepingClaims<D extends { executeSql(text: string, values?: unknown[]): Promise<unknown> }>(db: D): D {
  const execute = db.executeSql.bind(db);
  db.executeSql = (text: string, values?: unknown[]) => execute(failKeepingClaims(text) ?? text, values);
  return db;
}

/**
 * The claim's mark on pg-boss's job table and the attempts the history shows from it
 * (`job_claimed_attempts()`, read by the `job_attempts` view): each job a worker claimed whose
 * current attempt has no row yet — running (`active`), or ended a moment ago and not yet written by
 * its worker (which writes its ends every 100 ms), its end then read from the job (completed,
 * cancelled, or failed with pg-boss's output as its error). So no attempt leaves the history
 * between its claim and its row. Run by `release` after pg-boss's own migrations — the only place
 * pg-boss may rebuild its tables — so a rebuild that dropped the column gets it back in the same
 * release. A column added to the partitioned parent reaches every partition, and pg-boss creates
 * each new queue's partition `LIKE` the parent, so later queues have it too. Idempotent.
 */
export async function installClaimMarks(db: Knex): Promise<void> {
  const { rows } = await db.raw(`SELECT 1 FROM information_schema.columns WHERE table_schema = ? AND table_name = 'job' AND column_name = 'claimed_by'`, [
    BOSS_SCHEMA,
  ]);
  // Only when missing: ALTER TABLE locks every partition, even when it then has nothing to do.
  if (rows.length === 0) await db.raw(`ALTER TABLE ${JOB} ADD COLUMN IF NOT EXISTS claimed_by uuid`);
  await db.raw(
    `CREATE OR REPLACE FUNCTION job_claimed_attempts() RETURNS SETOF job_attempt_records LANGUAGE sql STABLE AS $fn$
       SELECT NULL::bigint, j.id, j.name, coalesce(j.data ->> '${ORGANIZATION_KEY}', j.group_id), j.retry_count, j.claimed_by, j.started_on,
              CASE WHEN j.state <> 'active' THEN coalesce(j.completed_on, j.started_on) END,
              CASE j.state WHEN 'active' THEN NULL WHEN 'completed' THEN 'completed' WHEN 'cancelled' THEN 'cancelled' ELSE 'failed' END,
              CASE WHEN j.state IN ('retry', 'failed') THEN j.output END
         FROM ${JOB} j
        WHERE j.claimed_by IS NOT NULL AND j.started_on IS NOT NULL AND j.state <> 'created'
          AND NOT EXISTS (SELECT 1 FROM job_attempt_records a
                           WHERE a.job_id = j.id AND a.attempt = j.retry_count AND (a.outcome IS DISTINCT FROM 'deferred' OR j.state = 'retry'))
     $fn$`,
  );
}

/** The attempts of `workers` running now by their claim's mark, with no row of their own yet. */
export async function runningClaims(
  db: Knex,
  workers: readonly string[],
): Promise<{ job_id: string; queue: string; organization_id: string | null; attempt: number; worker_id: string; started_at: Date }[]> {
  if (workers.length === 0) return [];
  const { rows } = await db.raw(
    `SELECT j.id AS job_id, j.name AS queue, coalesce(j.data ->> '${ORGANIZATION_KEY}', j.group_id) AS organization_id, j.retry_count AS attempt,
            j.claimed_by AS worker_id, j.started_on AS started_at
       FROM ${JOB} j
      WHERE j.state = 'active' AND j.claimed_by = ANY(?::uuid[])
        AND NOT EXISTS (SELECT 1 FROM job_attempt_records a WHERE a.job_id = j.id AND a.attempt = j.retry_count AND a.outcome IS DISTINCT FROM 'deferred')`,
    [workers as string[]],
  );
  return rows;
}

export interface UnrecordedAttempt {
  job_id: string;
  queue: string;
  organization_id: string | null;
  attempt: number;
  worker_id: string;
  started_at: Date;
  /** When pg-boss ended the job (null: it waits for a retry). */
  completed_on: Date | null;
  state: 'completed' | 'failed' | 'cancelled' | 'retry';
}

/**
 * Attempts of `workers` that ended — their job completed, failed, cancelled or waiting to retry —
 * with no row in the history: a worker writes its ends in batches (every 100 ms), so one killed
 * right after ending attempts leaves them unwritten. Their job rows still carry the claim's mark
 * (`job_claimed_i`); only jobs that ended since `since` are read.
 */
export async function unrecordedAttempts(db: Knex, workers: readonly string[], since: Date): Promise<UnrecordedAttempt[]> {
  if (workers.length === 0) return [];
  const { rows } = await db.raw(
    `SELECT j.id AS job_id, j.name AS queue, coalesce(j.data ->> '${ORGANIZATION_KEY}', j.group_id) AS organization_id, j.retry_count AS attempt,
            j.claimed_by AS worker_id, j.started_on AS started_at, j.completed_on, j.state
       FROM ${JOB} j
      WHERE j.claimed_by = ANY(?::uuid[]) AND (j.completed_on IS NULL OR j.completed_on >= ?)
        AND j.state IN ('completed', 'failed', 'cancelled', 'retry') AND j.started_on IS NOT NULL
        AND NOT EXISTS (SELECT 1 FROM job_attempt_records a
                         WHERE a.job_id = j.id AND a.attempt = j.retry_count AND (a.outcome IS DISTINCT FROM 'deferred' OR j.state = 'retry'))`,
    [workers as string[], since],
  );
  return rows as UnrecordedAttempt[];
}
