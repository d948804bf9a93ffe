import type { Knex } from 'knex';
import { BOSS_SCHEMA } from '../boss.ts';
import type { JobState } from './job-reads.ts';

// Row locks on pg-boss's job table for operator commands, and the dead-letter lineage they check.
//
// Lock order, everywhere: the jobs of working queues first, then dead letters, each set by id. A
// retry locks the failed job and then its dead-letter copy; a redrive locks the dead letter's source
// job and then the dead letter; bulk actions lock whole batches the same way. So two commands on
// the same failure serialize on the failed job's row and never deadlock.

const JOB = `${BOSS_SCHEMA}.job`;

/** A job as a command sees it once locked. */
export interface LockedJob {
  id: string;
  name: string;
  state: JobState;
  /** Its dead-letter queue (null: none). */
  dead_letter: string | null;
  /** A dead letter's provenance: the queue and the job that failed (null on other jobs). */
  source_name: string | null;
  source_id: string | null;
}

export interface JobRef {
  queue: string;
  id: string;
}

const lockedColumns = (alias: string) =>
  `${alias}.id, ${alias}.name, ${alias}.state::text AS state, ${alias}.dead_letter, ${alias}.source_name, ${alias}.source_id`;

/** Locks one job (FOR UPDATE) and reads its state; undefined when it does not exist. */
export async function lockJobState(trx: Knex.Transaction, queue: string, id: string): Promise<LockedJob | undefined> {
  const { rows } = await trx.raw(`SELECT ${lockedColumns('j')} FROM ${JOB} j WHERE j.name = ? AND j.id = ? FOR UPDATE`, [queue, id]);
  return rows[0] as LockedJob | undefined;
}

/** Locks these jobs (FOR UPDATE, in id order) and reads them; missing ones are not in the answer. */
export async function lockJobs(trx: Knex.Transaction, refs: readonly JobRef[]): Promise<LockedJob[]> {
  if (refs.length === 0) return [];
  const queues = [...new Set(refs.map((ref) => ref.queue))];
  const ids = [...new Set(refs.map((ref) => ref.id))];
  // `name` first: the table is partitioned by queue, so only those partitions are searched.
  const { rows } = await trx.raw(
    `SELECT ${lockedColumns('j')} FROM ${JOB} j WHERE j.name = ANY(?::text[]) AND j.id = ANY(?::uuid[]) ORDER BY j.id FOR UPDATE`,
    [queues, ids],
  );
  return rows as LockedJob[];
}

/**
 * Locks the dead-letter copies of these failed jobs (FOR UPDATE, in id order): the rows pg-boss
 * inserted into each job's dead-letter queue with `source_id` = the job and `source_name` = its
 * queue (plans.js failJobsBody, dlq_jobs). Found through `source_root_id` (pg-boss's lineage
 * index job_i12): the chain's first job, which is the failed job itself unless it was redriven.
 */
export async function lockDeadLettersOf(trx: Knex.Transaction, failed: readonly JobRef[]): Promise<LockedJob[]> {
  if (failed.length === 0) return [];
  const { rows } = await trx.raw(
    `SELECT ${lockedColumns('d')}
       FROM ${JOB} s
       JOIN ${JOB} d ON d.source_root_id = coalesce(s.source_root_id, s.id) AND d.name = s.dead_letter AND d.source_id = s.id AND d.source_name = s.name
      WHERE s.name = ANY(?::text[]) AND s.id = ANY(?::uuid[])
      ORDER BY d.id
      FOR UPDATE OF d`,
    [[...new Set(failed.map((ref) => ref.queue))], failed.map((ref) => ref.id)],
  );
  return rows as LockedJob[];
}

/**
 * The job each of these failed jobs was redriven as, if its failure was: a job pg-boss re-created
 * from the failure's dead letter (plans.js redriveJobs) carries the chain's `source_root_id`, no
 * `source_id`, lands in the failed job's queue and is newer than it. Dead letters are consumed by
 * the redrive and failures are retried or redriven, never both (src/jobs/commands.ts), so the chain
 * is a line and any such job is this failure's redrive. Job id → the redriven job.
 */
export async function redrivenCopiesOf(db: Knex | Knex.Transaction, failed: readonly JobRef[]): Promise<Map<string, { id: string; state: JobState }>> {
  if (failed.length === 0) return new Map();
  const { rows } = await db.raw(
    `SELECT x.id AS failed_id, r.id, r.state
       FROM ${JOB} x
       JOIN LATERAL (
         SELECT n.id, n.state::text AS state FROM ${JOB} n
          WHERE n.source_root_id = coalesce(x.source_root_id, x.id) AND n.name = x.name AND n.source_id IS NULL
            AND n.id <> x.id AND n.created_on > x.created_on
          ORDER BY n.created_on LIMIT 1
       ) r ON true
      WHERE x.name = ANY(?::text[]) AND x.id = ANY(?::uuid[])`,
    [[...new Set(failed.map((ref) => ref.queue))], failed.map((ref) => ref.id)],
  );
  return new Map((rows as { failed_id: string; id: string; state: JobState }[]).map((row) => [row.failed_id, { id: row.id, state: row.state }]));
}

/** The failed job each of these dead letters of `deadQueue` is a copy of (their source_* columns, which never change): dead letter id → its source. */
export async function deadLetterSources(db: Knex | Knex.Transaction, deadQueue: string, ids: readonly string[]): Promise<Map<string, JobRef>> {
  if (ids.length === 0) return new Map();
  const { rows } = await db.raw(
    `SELECT id, source_name, source_id FROM ${JOB} WHERE name = ? AND id = ANY(?::uuid[]) AND source_name IS NOT NULL AND source_id IS NOT NULL`,
    [deadQueue, [...ids]],
  );
  return new Map((rows as { id: string; source_name: string; source_id: string }[]).map((row) => [row.id, { queue: row.source_name, id: row.source_id }]));
}

/** Which of these ids are still jobs of `queue` (after a command that moves or removes them). */
export async function idsStillIn(db: Knex | Knex.Transaction, queue: string, ids: readonly string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const { rows } = await db.raw(`SELECT id FROM ${JOB} WHERE name = ? AND id = ANY(?::uuid[])`, [queue, [...ids]]);
  return new Set((rows as { id: string }[]).map((row) => row.id));
}
