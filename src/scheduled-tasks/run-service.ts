import type { Knex } from 'knex';
import { type Actor, changeLive, readableSql } from '../access/index.ts';
import { type Page, paginate, newestFirst } from '../core/pagination.ts';
import type { z } from '../core/zod.ts';
import type { Deps } from '../platform/deps.ts';
import type { ScheduledTaskRow } from './presenter.ts';
import { createRun, OPEN_RUN_STATES, recordRunsEnded, type RunSettings, type TaskRunRow } from './runs.ts';
import { scheduledTaskRunJob } from './jobs.ts';
import { cancelWorkOn } from '../jobs/ends.ts';
import { stopChatRun } from '../conversations/index.ts';
import type { listRunsQuery } from './schema.ts';
import { requireRunCovered } from './run-credits.ts';
import { checkSettings, requireRecipientsCanRead } from './service.ts';

const type = 'scheduled_task';

/**
 * Runs the task now (editors): `manual` with its settings, or `one_off` with overrides (checked
 * like the task's own; recipients must be able to read the task). The run acts as the caller and
 * is charged to them: 402 when they could not hold its credits now (their spending limit or the
 * balance), nothing queued.
 */
export async function startRunNow(deps: Deps, actor: Actor, taskId: string, overrides?: RunSettings): Promise<TaskRunRow> {
  const task = (await actor.resource<ScheduledTaskRow>(deps.db, type, taskId, 'edit')).row;
  if (overrides) {
    await checkSettings(deps, actor, task.organization_id, { model: overrides.model, email_recipients: overrides.email_recipients });
    if (overrides.email_recipients) await requireRecipientsCanRead(deps.db, taskId, overrides.email_recipients);
  }
  await requireRunCovered(deps, actor, task, {
    prompt: overrides?.prompt ?? task.prompt,
    model: overrides?.model !== undefined ? overrides.model : task.model,
  });
  return changeLive<ScheduledTaskRow, TaskRunRow>(deps, actor, type, taskId, async (trx, task) => {
    const run = await createRun(trx, deps, task, {
      trigger: overrides ? 'one_off' : 'manual',
      scheduledFor: new Date(),
      requestedById: actor.userId,
      overrides,
    });
    return run!;
  });
}

/**
 * Cancels the task's queued and running runs (editors), each settled in this transaction: a queued
 * run's own start job is canceled (the run with it; a run the dispatcher's batch job would start is
 * canceled here, and the batch skips it); a running run's chat turn is stopped — charged
 * only what it used, the rest released — and the run is canceled now (its turn's continuation then
 * records the credits used).
 */
export function cancelRuns(deps: Deps, actor: Actor, taskId: string): Promise<{ canceled: number }> {
  return changeLive<ScheduledTaskRow, { canceled: number }>(deps, actor, type, taskId, async (trx) => {
    const open = (await trx('scheduled_task_runs').where({ task_id: taskId }).whereIn('status', OPEN_RUN_STATES).select('id', 'chat_run_id')) as Pick<
      TaskRunRow,
      'id' | 'chat_run_id'
    >[];
    const reason = { code: 'canceled', message: 'canceled by the caller' };
    const joined = { ...deps, db: trx as unknown as Deps['db'] };
    for (const run of open) {
      await cancelWorkOn(trx, joined, scheduledTaskRunJob, 'run_id', run.id, reason);
      if (run.chat_run_id) await stopChatRun(joined, run.chat_run_id, reason);
    }
    const ended = (await trx('scheduled_task_runs')
      .whereIn(
        'id',
        open.map((run) => run.id),
      )
      .whereIn('status', OPEN_RUN_STATES)
      .update({ status: 'canceled', error: JSON.stringify(reason), finished_at: trx.fn.now() })
      .returning('*')) as TaskRunRow[];
    await recordRunsEnded(trx, ended);
    return { canceled: open.length };
  });
}

/** Runs of the tasks the caller can read, newest first, keyset paged; an empty page outside the organization. */
export async function listRuns(deps: Pick<Deps, 'db'>, actor: Actor, query: z.output<typeof listRunsQuery>): Promise<Page<TaskRunRow>> {
  const viewer = await actor.viewer(query.organization_id);
  if (!viewer) return { items: [], next_cursor: null };
  const readable = readableSql(type, 't', viewer);
  const rows = deps
    .db('scheduled_task_runs as r')
    .join('scheduled_tasks as t', 't.id', 'r.task_id')
    .where('r.organization_id', query.organization_id)
    .whereRaw(readable.sql, readable.bindings as Knex.RawBinding[])
    .modify((q) => {
      if (query.task_id) q.where('r.task_id', query.task_id);
      if (query.status) q.where('r.status', query.status);
      if (query.from) q.where('r.scheduled_for', '>=', query.from);
      if (query.to) q.where('r.scheduled_for', '<', query.to);
    })
    .select('r.*');
  return paginate<TaskRunRow>(rows, newestFirst('r'), query);
}

/**
 * The job console's "trigger now" of a scheduled task (an operator, or an admin of its
 * organization, decided by the console): a manual run requested by nobody in particular — the run
 * acts as (and is charged to) the task's creator, like its scheduled slots. `null` when the task does not exist or was deleted.
 */
export async function triggerTaskRun(trx: Knex.Transaction, deps: Pick<Deps, 'jobs'>, taskId: string): Promise<TaskRunRow | null> {
  const task = (await trx('scheduled_tasks').where({ id: taskId }).whereNull('deleted_at').forUpdate().first()) as ScheduledTaskRow | undefined;
  if (!task) return null;
  return createRun(trx, deps, task, { trigger: 'manual', scheduledFor: new Date(), requestedById: null });
}
