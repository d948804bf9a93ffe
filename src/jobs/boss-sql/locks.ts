import type { Knex } from 'knex';
import { BOSS_SCHEMA } from '../boss.ts';
import type { JobState } from './job-reads.ts';

// Row locks on pg-boss's job table for operator commands. A batch is locked in id order, so two
// commands on overlapping jobs wait for each other instead of deadlocking.

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

/** Which of these ids are still jobs of `queue` (after a command that moves or removes them). */
export async function idsStillIn(db: Knex | Knex.Transaction, queue: string, ids: readonly string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const { rows } = await db.raw(`SELECT id FROM ${JOB} WHERE name = ? AND id = ANY(?::uuid[])`, [queue, [...ids]]);
  return new Set((rows as { id: string }[]).map((row) => row.id));
}

// ── Attempt fencing ─────────────────────────────────────────────────────────────────────────────
// Checks that a worker's attempt still holds its job (the row locked FOR NO KEY UPDATE, state
// 'active' and the attempt's retry_count) before it writes results, settles or charges, go here.
