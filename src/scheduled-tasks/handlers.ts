// Worker side of scheduled tasks (loaded by the `handler` of each job in ./jobs.ts).
import { setTimeout as sleep } from 'node:timers/promises';
import { actorFor } from '../access/index.ts';
import { type ChatRunRow, openScheduledConversation, startScheduledTurn, stopChatRun } from '../conversations/index.ts';
import { isAppError } from '../core/errors.ts';
import { enqueueBalanceAlertCheck } from '../credits/index.ts';
import type { JobContext } from '../jobs/define.ts';
import type { Deps } from '../platform/deps.ts';
import { dispatchDueTasks } from './dispatcher.ts';
import { type ScheduledTaskEmailPayload, scheduledTaskEmailJob, type ScheduledTaskRunPayload } from './jobs.ts';
import type { ScheduledTaskRow } from './presenter.ts';
import type { TaskRunRow } from './runs.ts';

/** How often a run looks at its chat run (and whether it was canceled) while the turn streams. */
const WATCH_MS = 500;
const OPEN = ['queued', 'running'];

export async function dispatchScheduledTasks(_payload: unknown, { deps, log }: JobContext): Promise<void> {
  const created = await dispatchDueTasks(deps, new Date());
  if (created) log.info({ created }, 'scheduled task runs dispatched');
}

const loadRun = async (deps: Deps, id: string) => (await deps.db('scheduled_task_runs').where({ id }).first()) as TaskRunRow | undefined;

/** Ends an open run (a canceled run keeps its state; only the credits it used are recorded). */
async function endRun(
  deps: Deps,
  run: TaskRunRow,
  state: TaskRunRow['state'],
  fields: { credits_used?: number; error?: { code: string; message: string } | null },
) {
  await deps.db.transaction(async (trx) => {
    const current = (await trx('scheduled_task_runs').where({ id: run.id }).forUpdate().first()) as TaskRunRow;
    if (!OPEN.includes(current.state)) {
      if (fields.credits_used !== undefined && current.credits_used === null)
        await trx('scheduled_task_runs').where({ id: run.id }).update({ credits_used: fields.credits_used });
      return;
    }
    await trx('scheduled_task_runs')
      .where({ id: run.id })
      .update({ state, credits_used: fields.credits_used ?? 0, error: fields.error ? JSON.stringify(fields.error) : null, finished_at: trx.fn.now() });
    if (state === 'succeeded')
      for (const userId of current.email_recipients)
        await deps.jobs.enqueue(trx, scheduledTaskEmailJob, { run_id: run.id, user_id: userId }, { organizationId: current.organization_id });
    // Out of credits: the organization's low-balance alerts are checked now, not at the next sweep.
    if (state === 'skipped') await enqueueBalanceAlertCheck(deps, trx, current.organization_id);
  });
}

export async function runScheduledTask({ run_id }: ScheduledTaskRunPayload, { deps, log, signal }: JobContext): Promise<void> {
  let run = await loadRun(deps, run_id);
  if (!run || !OPEN.includes(run.state)) return;
  const task = (await deps.db('scheduled_tasks').where({ id: run.task_id }).first()) as ScheduledTaskRow | undefined;
  // Disabling or deleting the task stops its queued scheduled runs too.
  if (!task || task.deleted_at || (run.trigger === 'schedule' && !task.enabled))
    return endRun(deps, run, 'canceled', { error: { code: 'task_stopped', message: 'the task was disabled or deleted before this run started' } });
  await deps.db('scheduled_task_runs').where({ id: run.id, state: 'queued' }).update({ state: 'running', started_at: deps.db.fn.now() });
  // The run acts as the task's creator: their access and spending limit apply.
  const actor = actorFor(deps.db, { userId: task.created_by_id });
  try {
    if (!run.conversation_id) {
      // The skill as the creator can read it now (a skill they lost access to fails the run, saying so).
      const skill = task.skill_id ? (await actor.resource<{ body: string }>(deps.db, 'skill', task.skill_id, 'read')).row : null;
      const conversationId = await openScheduledConversation(deps, actor, {
        skillBody: skill?.body ?? null,
        organizationId: task.organization_id,
        scheduleId: task.id,
        title: `${task.title} · ${run.scheduled_for.toISOString().slice(0, 16).replace('T', ' ')} UTC`,
        prompt: run.prompt,
        model: run.model,
        maxCredits: run.max_credits,
      });
      await deps.db('scheduled_task_runs').where({ id: run.id }).update({ conversation_id: conversationId });
      run = { ...run, conversation_id: conversationId };
    }
    if (!run.chat_run_id) {
      const chat = await startScheduledTurn(deps, actor, run.conversation_id!, { model: run.model, maxCredits: run.max_credits });
      await deps.db('scheduled_task_runs').where({ id: run.id }).update({ chat_run_id: chat.id });
      run = { ...run, chat_run_id: chat.id };
    }
  } catch (error) {
    // A setting no longer valid (the model gone, the creator's access lost): the run fails, saying why.
    if (isAppError(error)) return endRun(deps, run, 'failed', { error: { code: error.code, message: error.message } });
    throw error;
  }

  // The chat run is the conversations machinery's: watch it end (and stop it if this run was canceled).
  let stopping = false;
  for (;;) {
    const chat = (await deps.db('chat_runs').where({ id: run.chat_run_id }).first()) as ChatRunRow;
    if (chat.credits_charged !== null || chat.status === 'failed') {
      const credits = chat.credits_charged ?? 0;
      if (chat.status === 'succeeded') return endRun(deps, run, 'succeeded', { credits_used: credits });
      if (chat.status === 'stopped')
        return endRun(deps, run, 'canceled', { credits_used: credits, error: { code: 'canceled', message: 'the run was canceled' } });
      const error = chat.error ?? { code: 'failed', message: 'the chat run failed' };
      // No credits (balance or spending limit): skipped, not failed — nothing ran.
      return endRun(deps, run, error.code === 'payment_required' ? 'skipped' : 'failed', { credits_used: credits, error });
    }
    const current = await loadRun(deps, run.id);
    if (current?.state === 'canceled' && !stopping) {
      stopping = true;
      await stopChatRun(deps, actor, run.conversation_id!).catch((error: unknown) => log.warn({ err: error, run_id }, 'stopping the chat run failed'));
    }
    await sleep(WATCH_MS, undefined, { signal });
  }
}

export async function emailRunAnswer({ run_id, user_id }: ScheduledTaskEmailPayload, { deps }: JobContext): Promise<void> {
  const run = await loadRun(deps, run_id);
  if (run?.state !== 'succeeded' || !run.chat_run_id) return;
  const task = (await deps.db('scheduled_tasks').where({ id: run.task_id }).first('title')) as { title: string };
  const chat = (await deps.db('chat_runs').where({ id: run.chat_run_id }).first('answer_message_id')) as { answer_message_id: string | null };
  const answer = chat.answer_message_id
    ? ((await deps.db('conversation_messages').where({ id: chat.answer_message_id }).first('content')) as { content: string }).content
    : '';
  const user = (await deps.db('users').where({ id: user_id }).first('email')) as { email: string | null } | undefined;
  if (!user?.email) return;
  const link = `${deps.config.PUBLIC_URL?.replace(/\/$/, '') ?? ''}/conversations/${run.conversation_id}`;
  await deps.providers.email.send({
    to: user.email,
    subject: `Scheduled task: ${task.title}`,
    text: `${answer}\n\n— Open the conversation: ${link}`,
    idempotencyKey: `scheduled-task-run:${run.id}:${user_id}`,
  });
}
