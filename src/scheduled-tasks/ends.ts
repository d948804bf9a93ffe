// How a scheduled run's jobs end, for the run: the start job's (the run fails or is canceled if it
// never started its turn) and the finish job's (the run ends as its chat turn did).
import type { Knex } from 'knex';
import type { ChatRunRow } from '../conversations/index.ts';
import { enqueueBalanceAlertCheck } from '../credits/index.ts';
import type { EndContext, EndReason, JobEnds } from '../jobs/define.ts';
import { type ScheduledTaskRunPayload, type ScheduledTaskStartPayload, scheduledTaskEmailJob } from './jobs.ts';
import { OPEN_RUN_STATES, recordRunsEnded, type TaskRunRow } from './runs.ts';

/** What the start job hands its `succeeded` end: whether the turn started (a disabled or deleted task starts nothing). */
export interface RunStart {
  started: boolean;
}

/** How the run's chat turn ended, as its continuation read it. */
export interface TurnOutcome {
  status: ChatRunRow['status'];
  credits: number;
  error: { code: string; message: string } | null;
}

/**
 * Ends an open run (a run canceled meanwhile keeps its status; only the credits it used are
 * recorded). A succeeded run's answer is e-mailed to each recipient; a skipped one (no credits)
 * has its organization's low-balance alerts checked now, not at the next sweep.
 */
async function endRun(
  trx: Knex.Transaction,
  { deps }: EndContext,
  runId: string,
  status: TaskRunRow['status'],
  fields: { credits_used?: number; error?: EndReason | null },
): Promise<void> {
  const current = (await trx('scheduled_task_runs').where({ id: runId }).forUpdate().first()) as TaskRunRow | undefined;
  if (!current) return;
  if (!(OPEN_RUN_STATES as readonly string[]).includes(current.status)) {
    if (fields.credits_used !== undefined && current.credits_used === null)
      await trx('scheduled_task_runs').where({ id: runId }).update({ credits_used: fields.credits_used });
    return;
  }
  const ended = (await trx('scheduled_task_runs')
    .where({ id: runId })
    .update({ status, credits_used: fields.credits_used ?? 0, error: fields.error ? JSON.stringify(fields.error) : null, finished_at: trx.fn.now() })
    .returning('*')) as TaskRunRow[];
  await recordRunsEnded(trx, ended);
  if (status === 'succeeded')
    for (const userId of current.email_recipients)
      await deps.jobs.enqueue(trx, scheduledTaskEmailJob, { run_id: runId, user_id: userId }, { organizationId: current.organization_id });
  if (status === 'skipped') await enqueueBalanceAlertCheck(deps, trx, current.organization_id);
}

export const TASK_STOPPED = { code: 'task_stopped', message: 'the task was disabled or deleted before this run started' };

/** Ends runs that never started their turn (still queued), in one statement: no credits used, nothing to mail. */
export async function endUnstartedRuns(trx: Knex.Transaction, runIds: readonly string[], status: 'failed' | 'canceled', error: EndReason): Promise<void> {
  if (runIds.length === 0) return;
  const ended = (await trx('scheduled_task_runs')
    .whereIn('id', runIds)
    .where({ status: 'queued' })
    .update({ status, credits_used: 0, error: JSON.stringify(error), finished_at: trx.fn.now() })
    .returning('*')) as TaskRunRow[];
  await recordRunsEnded(trx, ended);
}

export const runStartEnds: JobEnds<ScheduledTaskRunPayload, RunStart> = {
  async succeeded(trx, { run_id }, { started }, context) {
    if (!started) await endRun(trx, context, run_id, 'canceled', { error: TASK_STOPPED });
  },
  async failed(trx, { run_id }, reason, context) {
    await endRun(trx, context, run_id, 'failed', { error: reason });
  },
  async canceled(trx, { run_id }, reason, context) {
    await endRun(trx, context, run_id, 'canceled', { error: reason });
  },
  /** A run that failed before it started its turn is queued again (one that started a turn ends with it). */
  async reopen(trx, { run_id }) {
    const reopened = await trx('scheduled_task_runs')
      .where({ id: run_id, status: 'failed' })
      .whereNull('chat_run_id')
      .update({ status: 'queued', error: null, credits_used: null, finished_at: null })
      .returning('id');
    return reopened.length === 1;
  },
};

/** A batch's start job: the runs it had not started end with it (a run it started ends with its turn). */
export const runBatchStartEnds: JobEnds<ScheduledTaskStartPayload, void> = {
  async failed(trx, { run_ids }, reason) {
    await endUnstartedRuns(trx, run_ids, 'failed', reason);
  },
  async canceled(trx, { run_ids }, reason) {
    await endUnstartedRuns(trx, run_ids, 'canceled', reason);
  },
  /** The runs that failed with the batch, before they started a turn, are queued again. */
  async reopen(trx, { run_ids }) {
    const reopened = await trx('scheduled_task_runs')
      .whereIn('id', run_ids)
      .where({ status: 'failed' })
      .whereNull('chat_run_id')
      .update({ status: 'queued', error: null, credits_used: null, finished_at: null })
      .returning('id');
    return reopened.length > 0;
  },
};

export const runFinishEnds: JobEnds<ScheduledTaskRunPayload, TurnOutcome> = {
  async succeeded(trx, { run_id }, turn, context) {
    const credits_used = turn.credits;
    if (turn.status === 'succeeded') return endRun(trx, context, run_id, 'succeeded', { credits_used });
    if (turn.status === 'stopped')
      return endRun(trx, context, run_id, 'canceled', { credits_used, error: { code: 'canceled', message: 'the run was canceled' } });
    const error = turn.error ?? { code: 'failed', message: 'the chat run failed' };
    // No credits (balance or spending limit): skipped, not failed — nothing ran.
    await endRun(trx, context, run_id, error.code === 'payment_required' ? 'skipped' : 'failed', { credits_used, error });
  },
  async failed(trx, { run_id }, reason, context) {
    await endRun(trx, context, run_id, 'failed', { error: reason });
  },
  async canceled(trx, { run_id }, reason, context) {
    await endRun(trx, context, run_id, 'canceled', { error: reason });
  },
};
