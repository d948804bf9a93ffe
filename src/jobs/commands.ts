import { fromKnex, type PgBoss } from 'pg-boss';
import type { Tx } from '../db/knex.ts';
import { affected } from './boss.ts';
import { deadLetterSources, idsStillIn, type JobRef, type JobRow, type JobState, lockDeadLettersOf, lockJobs, redrivenCopiesOf } from './boss-sql/index.ts';

/** Why a command left a job alone. */
export type SkipCause =
  | { kind: 'missing' }
  | { kind: 'state'; state: JobState }
  /** A retry of a failure whose dead letter was already redriven: `as` is the job it was redriven as. */
  | { kind: 'redriven'; as: { id: string; state: JobState } }
  /** A redrive of a dead letter whose failed job was already retried. */
  | { kind: 'retried'; source: { id: string; state: JobState } }
  /** A retry of a failure whose dead-letter copy is being worked right now. */
  | { kind: 'dead-letter-running'; deadLetter: string }
  /** pg-boss could not re-create the dead letter in its queue (a singleton conflict): it failed it in place. */
  | { kind: 'conflict' }
  /** Its resource ended with the failure and its kind cannot reopen it (src/jobs/ends.ts reopenForRetry). */
  | { kind: 'not-reopened' };

export interface Skipped {
  id: string;
  cause: SkipCause;
  /** The cause in the console's words (bulk-action outcomes, 409 answers). */
  reason: string;
}

export interface CommandResult {
  /** The jobs the command changed. */
  done: string[];
  skipped: Skipped[];
}

export interface RetryResult extends CommandResult {
  /** Failed job → its dead-letter copy, cancelled with the retry (so it cannot be redriven as well). */
  deadLettersCancelled: Map<string, string>;
}

/** Dead letters a redrive takes (pg-boss redrives only jobs not yet started): a retry cancels its failure's copy in these states. */
const REDRIVABLE: readonly JobState[] = ['created', 'retry'];

function reasonOf(cause: SkipCause): string {
  switch (cause.kind) {
    case 'missing':
      return 'the job no longer exists';
    case 'state':
      return `the job is now ${cause.state}`;
    case 'redriven':
      return `already redriven: its dead letter was moved back as job ${cause.as.id} (it is ${cause.as.state})`;
    case 'retried':
      return `already retried: its failed job ${cause.source.id} was retried instead (it is ${cause.source.state})`;
    case 'dead-letter-running':
      return `its dead letter ${cause.deadLetter} is running`;
    case 'conflict':
      return 'pg-boss could not move it back (a conflicting job)';
    case 'not-reopened':
      return 'its work ended with the failure and cannot be reopened';
  }
}

const skip = (id: string, cause: SkipCause, reason = reasonOf(cause)): Skipped => ({ id, cause, reason });

/**
 * The job console's commands, each on the caller's transaction so the audit record commits with
 * it, through pg-boss's API. Retry and redrive of one failure are mutually exclusive: a failed job
 * that failed for good sits in its queue as `failed` *and* has a copy in its dead-letter queue, and
 * exactly one of "retry the job" and "redrive the copy" may happen. Both lock the failed job first
 * and the copy second (./boss-sql/locks.ts), so whichever commits first wins and the other sees it:
 * a retry cancels the copy (kept, so a later redrive of it can say why it is skipped) and is refused
 * when the copy was already redriven; a redrive is refused when the failed job was already retried.
 */
export class JobCommands {
  private readonly boss: PgBoss;
  constructor(boss: PgBoss) {
    this.boss = boss;
  }

  /** Failed jobs of `queue` get one more attempt, and their dead-letter copies are cancelled. */
  async retryFailed(trx: Tx, queue: string, ids: readonly string[]): Promise<RetryResult> {
    const jobs = new Map(
      (
        await lockJobs(
          trx,
          ids.map((id) => ({ queue, id })),
        )
      ).map((job) => [job.id, job]),
    );
    const failed: JobRef[] = [...jobs.values()].filter((job) => job.state === 'failed').map((job) => ({ queue: job.name, id: job.id }));
    const copies = groupBy(await lockDeadLettersOf(trx, failed), (copy) => copy.source_id!);
    const redriven = await redrivenCopiesOf(trx, failed);

    const skipped: Skipped[] = [];
    const retry: string[] = [];
    const cancels = new Map<string, string>(); // dead letter → its queue
    for (const id of new Set(ids)) {
      const job = jobs.get(id);
      const running = copies.get(id)?.find((copy) => copy.state === 'active');
      if (!job) skipped.push(skip(id, { kind: 'missing' }));
      else if (job.state !== 'failed') skipped.push(skip(id, { kind: 'state', state: job.state }));
      else if (redriven.has(id)) skipped.push(skip(id, { kind: 'redriven', as: redriven.get(id)! }));
      else if (running) skipped.push(skip(id, { kind: 'dead-letter-running', deadLetter: running.id }));
      else {
        retry.push(id);
        for (const copy of copies.get(id) ?? []) if (REDRIVABLE.includes(copy.state)) cancels.set(copy.id, copy.name);
      }
    }
    const db = fromKnex(trx);
    for (const [deadQueue, copies] of groupBy([...cancels], ([, name]) => name))
      await this.boss.cancel(
        deadQueue,
        copies.map(([copyId]) => copyId),
        { db },
      );
    // Every job of `retry` is failed and locked by this transaction, so pg-boss retries each one.
    if (retry.length > 0) await this.boss.retry(queue, retry, { db });
    const deadLettersCancelled = new Map<string, string>();
    for (const id of retry) for (const copy of copies.get(id) ?? []) if (cancels.has(copy.id)) deadLettersCancelled.set(id, copy.id);
    return { done: retry, skipped, deadLettersCancelled };
  }

  /**
   * Moves these dead letters of `deadQueue` back to the queue they failed on (pg-boss re-creates
   * each as a new job there and keeps its lineage). Skipped: a dead letter no longer waiting, one
   * whose failed job was retried instead, one pg-boss could not re-create (a conflicting job).
   */
  async redrive(trx: Tx, deadQueue: string, ids: readonly string[]): Promise<CommandResult> {
    const unique = [...new Set(ids)];
    // The failed jobs they are copies of, locked before the dead letters (the order every command keeps).
    const sourceOf = await deadLetterSources(trx, deadQueue, unique);
    const sources = new Map((await lockJobs(trx, [...sourceOf.values()])).map((job) => [job.id, job]));
    const letters = new Map(
      (
        await lockJobs(
          trx,
          unique.map((id) => ({ queue: deadQueue, id })),
        )
      ).map((job) => [job.id, job]),
    );
    const redriven = await redrivenCopiesOf(
      trx,
      [...sources.values()].filter((job) => job.state === 'failed').map((job) => ({ queue: job.name, id: job.id })),
    );

    const skipped: Skipped[] = [];
    const candidates: string[] = [];
    for (const id of unique) {
      const letter = letters.get(id);
      const sourceId = sourceOf.get(id)?.id;
      const source = sourceId ? sources.get(sourceId) : undefined;
      const redrivenAs = source && redriven.get(source.id);
      // Checked first: a retry of the failed job also cancelled this dead letter, and that state alone would not say why.
      if (source && source.state !== 'failed') skipped.push(skip(id, { kind: 'retried', source: { id: source.id, state: source.state } }));
      else if (redrivenAs) skipped.push(skip(id, { kind: 'redriven', as: redrivenAs }));
      else if (!letter) skipped.push(skip(id, { kind: 'missing' }, 'the dead letter no longer exists'));
      else if (!REDRIVABLE.includes(letter.state)) skipped.push(skip(id, { kind: 'state', state: letter.state }));
      else candidates.push(id);
    }
    if (candidates.length === 0) return { done: [], skipped };
    await this.boss.redrive(deadQueue, { ids: candidates, limit: candidates.length, db: fromKnex(trx) });
    // A dead letter pg-boss could not re-create (a conflicting singleton in its queue) is still here, failed in place.
    const left = await idsStillIn(trx, deadQueue, candidates);
    for (const id of left) skipped.push(skip(id, { kind: 'conflict' }));
    return { done: candidates.filter((id) => !left.has(id)), skipped };
  }

  /** Cancelled jobs are queued again. Returns how many changed. */
  async resumeCancelled(trx: Tx, queue: string, ids: readonly string[]): Promise<number> {
    return affected(await this.boss.resume(queue, [...ids], { db: fromKnex(trx) }));
  }

  /** Queued or running → cancelled (a running attempt's completion then changes nothing). Returns how many changed. */
  async cancel(trx: Tx, queue: string, ids: readonly string[]): Promise<number> {
    return affected(await this.boss.cancel(queue, [...ids], { db: fromKnex(trx) }));
  }

  async remove(trx: Tx, queue: string, ids: readonly string[]): Promise<number> {
    return affected(await this.boss.deleteJob(queue, [...ids], { db: fromKnex(trx) }));
  }

  /** One job of a known queue, as the console shows it (pg-boss's getJobById), on the caller's transaction when given. */
  async job(queue: string, id: string, trx?: Tx): Promise<JobRow | undefined> {
    const job = await this.boss.getJobById<Record<string, unknown>>(queue, id, trx ? { db: fromKnex(trx) } : {});
    if (!job) return undefined;
    return {
      id: job.id,
      name: job.name,
      state: job.state,
      group_id: job.groupId ?? null,
      data: job.data ?? null,
      output: job.output ?? null,
      retry_count: job.retryCount,
      retry_limit: job.retryLimit,
      priority: job.priority,
      created_on: job.createdOn,
      start_after: job.startAfter,
      started_on: job.startedOn ?? null,
      completed_on: job.completedOn ?? null,
      dead_letter: job.deadLetter ?? null,
      source_name: job.sourceName ?? null,
      source_id: job.sourceId ?? null,
    };
  }

  /** Whether `name` is a pg-boss queue (pg-boss's getQueue). */
  async queueExists(name: string): Promise<boolean> {
    return (await this.boss.getQueue(name)) !== null;
  }
}

function groupBy<T>(items: readonly T[], key: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) groups.set(key(item), [...(groups.get(key(item)) ?? []), item]);
  return groups;
}
