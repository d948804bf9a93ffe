import { setTimeout as sleep } from 'node:timers/promises';
import type { Knex } from 'knex';
import { findJobRows, lockJobs } from '../jobs/boss-sql/index.ts';
import type { CommandResult } from '../jobs/commands.ts';
import type { JobContext } from '../jobs/define.ts';
import { cancelJob, reopenForRetry } from '../jobs/ends.ts';
import type { Deps } from '../platform/deps.ts';
import { actionableStates, type BulkActionRow, type BulkKind } from './bulk-model.ts';
import { inTransaction } from '../db/transaction.ts';

interface Outcome {
  job_id: string;
  outcome: 'done' | 'skipped';
  reason: string | null;
}

/**
 * The bulk-action job: one transaction per batch (lock the action, take the next items, lock their
 * jobs, act on the ones still in an actionable state, record each item's outcome and the counts),
 * then a pause, so a bulk action of 100,000 jobs never crowds out live work. Aborts are honoured
 * between batches. A retried attempt continues where the last committed batch ended.
 */
export async function runBulkAction({ bulk_action_id }: { bulk_action_id: string }, { deps, signal, log }: JobContext): Promise<void> {
  for (;;) {
    signal.throwIfAborted();
    const finished = await inTransaction(deps.db, (trx) => runBatch(trx, deps, bulk_action_id));
    if (finished) {
      log.info({ bulk_action_id }, 'bulk action finished');
      return;
    }
    if (deps.config.OPS_BULK_PAUSE_MS > 0) await sleep(deps.config.OPS_BULK_PAUSE_MS, undefined, { signal });
  }
}

async function runBatch(trx: Knex.Transaction, deps: Deps, id: string): Promise<boolean> {
  const bulk = (await trx('bulk_actions').where({ id }).forUpdate().first()) as BulkActionRow | undefined;
  if (bulk?.state !== 'running') return true;
  if (bulk.abort_requested_at) {
    await trx('bulk_actions').where({ id }).update({ state: 'aborted', finished_at: trx.fn.now() });
    return true;
  }
  const items = (await trx('bulk_action_items')
    .where({ bulk_action_id: id })
    .whereNull('outcome')
    .orderBy('job_id')
    .limit(deps.config.OPS_BULK_BATCH_SIZE)
    .select('job_id', 'queue')) as { job_id: string; queue: string }[];
  if (items.length === 0) {
    await trx('bulk_actions').where({ id }).update({ state: 'completed', finished_at: trx.fn.now() });
    return true;
  }
  const outcomes = await act(trx, deps, bulk.action, items);
  await trx.raw(
    `UPDATE bulk_action_items i SET outcome = x.outcome, skip_reason = x.reason
       FROM jsonb_to_recordset(?::jsonb) AS x(job_id uuid, outcome text, reason text)
      WHERE i.bulk_action_id = ? AND i.job_id = x.job_id`,
    [JSON.stringify(outcomes), id],
  );
  const done = outcomes.filter((o) => o.outcome === 'done').length;
  await trx('bulk_actions')
    .where({ id })
    .update({ done: trx.raw('done + ?', [done]), skipped: trx.raw('skipped + ?', [outcomes.length - done]) });
  return false;
}

/**
 * Acts on the items' jobs that are still actionable; every other item is skipped with why. A redrive
 * is left to the command entirely (it locks each dead letter's failed job before the dead letter,
 * the order every command keeps); retry and cancel lock the batch's jobs first.
 */
async function act(trx: Knex.Transaction, deps: Deps, action: BulkKind, items: readonly { job_id: string; queue: string }[]): Promise<Outcome[]> {
  const outcomes: Outcome[] = [];
  const record = (result: CommandResult) => {
    for (const jobId of result.done) outcomes.push({ job_id: jobId, outcome: 'done', reason: null });
    for (const skipped of result.skipped) outcomes.push({ job_id: skipped.id, outcome: 'skipped', reason: skipped.reason });
  };
  if (action === 'redrive') {
    for (const [queue, ids] of byQueue(items)) await reopenEach(trx, deps, queue, ids, record, (sp, id) => deps.jobs.commands.redrive(sp, queue, [id]));
    return outcomes;
  }
  const jobs = await lockJobs(
    trx,
    items.map((item) => ({ queue: item.queue, id: item.job_id })),
  );
  const state = new Map(jobs.map((job) => [job.id, job.state]));
  const groups = new Map<string, string[]>(); // `${queue}\n${state}` → ids
  for (const item of items) {
    const now = state.get(item.job_id);
    if (now === undefined) outcomes.push({ job_id: item.job_id, outcome: 'skipped', reason: 'the job no longer exists' });
    else if (!(actionableStates[action] as readonly string[]).includes(now))
      outcomes.push({ job_id: item.job_id, outcome: 'skipped', reason: `the job is now ${now}` });
    else {
      const key = `${item.queue}\n${now}`;
      groups.set(key, [...(groups.get(key) ?? []), item.job_id]);
    }
  }
  for (const [key, ids] of groups) {
    const [queue, now] = key.split('\n') as [string, string];
    // A failed job whose dead letter was redriven meanwhile is skipped, "already redriven".
    if (action === 'retry' && now === 'failed') await reopenEach(trx, deps, queue, ids, record, (sp, id) => deps.jobs.commands.retryFailed(sp, queue, [id]));
    else {
      if (action === 'retry') await deps.jobs.commands.resumeCancelled(trx, queue, ids);
      else if (action === 'delete') await deps.jobs.commands.remove(trx, queue, ids);
      // Each with its resource's end (a generation canceled, its hold released) and its running attempt told.
      else for (const jobId of ids) await cancelJob(trx, deps, queue, jobId, { code: 'canceled', message: 'canceled by an operator (bulk action)' });
      record({ done: ids, skipped: [] });
    }
  }
  return outcomes;
}

/** Rolls back one job's reopen when its command skipped it (the savepoint's way out). */
class SkippedByCommand extends Error {
  readonly result: CommandResult;
  constructor(result: CommandResult) {
    super('skipped');
    this.result = result;
  }
}

/**
 * Retries (or redrives) each failed job on its own savepoint, with its resource reopened by its kind
 * (src/jobs/ends.ts reopenForRetry): a kind that cannot reopen skips the job with why, and a
 * command that skips it (already retried or redriven) rolls the reopen back.
 */
async function reopenEach(
  trx: Knex.Transaction,
  deps: Deps,
  queue: string,
  ids: readonly string[],
  record: (result: CommandResult) => void,
  command: (savepoint: Knex.Transaction, id: string) => Promise<CommandResult>,
): Promise<void> {
  const data = new Map((await findJobRows(trx, ids)).map((job) => [job.id, job.data]));
  for (const id of ids) {
    const result = await trx
      .transaction(async (savepoint) => {
        const refusal = await reopenForRetry(savepoint, deps, queue, data.get(id));
        if (refusal) return { done: [], skipped: [{ id, cause: { kind: 'not-reopened' as const }, reason: refusal }] };
        const done = await command(savepoint, id);
        if (done.done.length === 0) throw new SkippedByCommand(done);
        return done;
      })
      .catch((error: unknown) => {
        if (error instanceof SkippedByCommand) return error.result;
        throw error;
      });
    record(result);
  }
}

function byQueue(items: readonly { job_id: string; queue: string }[]): Map<string, string[]> {
  const groups = new Map<string, string[]>();
  for (const item of items) groups.set(item.queue, [...(groups.get(item.queue) ?? []), item.job_id]);
  return groups;
}
