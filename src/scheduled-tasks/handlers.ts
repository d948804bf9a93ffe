// Worker side of scheduled tasks (loaded by the `handler` of each job in ./jobs.ts).
import { actorFor } from '../access/index.ts';
import type { ChatRunRow } from '../conversations/index.ts';
import { isAppError } from '../core/errors.ts';
import { failForGood, type JobContext, type NothingToDo, nothingToDo } from '../jobs/define.ts';
import type { Deps } from '../platform/deps.ts';
import { dispatchDueTasks } from './dispatcher.ts';
import { endUnstartedRuns, type RunStart, type TurnOutcome } from './ends.ts';
import type { ScheduledTaskEmailPayload, ScheduledTaskRunPayload, ScheduledTaskStartPayload } from './jobs.ts';
import { startQueuedRuns } from './start.ts';
import { OPEN_RUN_STATES, type TaskRunRow } from './runs.ts';

export async function dispatchScheduledTasks(_payload: unknown, { deps, log }: JobContext): Promise<void> {
  const created = await dispatchDueTasks(deps, new Date());
  if (created) log.info({ created }, 'scheduled task runs dispatched');
}

const loadRun = async (db: Deps['db'], id: string) => (await db('scheduled_task_runs').where({ id }).first()) as TaskRunRow | undefined;

/**
 * Starts a run (a manual or one-off run's own job) in ONE step: its conversation (with the skill and
 * the prompt), its chat run (whose end continues the run) and the run's own row moved to `running`
 * — so a retry after a crash finds either all of it or none, and never opens a second conversation.
 * Then the job ends; no worker waits for the turn. A start refused (the model gone, the creator's
 * access lost) fails the run, saying why.
 */
export async function startScheduledRun({ run_id }: ScheduledTaskRunPayload, job: JobContext): Promise<RunStart | NothingToDo> {
  return job.step(async (trx) => {
    const outcome = await startQueuedRuns(trx, job.deps, [run_id]);
    if (outcome.queued === 0) return nothingToDo('the run has started or ended already');
    const refusal = outcome.refused[0];
    if (refusal) throw failForGood(refusal.error.code, refusal.error.message, refusal.error);
    return { started: outcome.started === 1 };
  });
}

/**
 * Starts the dispatcher's batch of runs in ONE step, a few statements for the whole batch (./start.ts);
 * a run whose start is refused fails alone, saying why. A retry starts only the runs still queued.
 */
export async function startScheduledRuns({ run_ids }: ScheduledTaskStartPayload, job: JobContext): Promise<void> {
  const outcome = await job.step(async (trx) => {
    const started = await startQueuedRuns(trx, job.deps, run_ids);
    for (const { runId, error } of started.refused) await endUnstartedRuns(trx, [runId], 'failed', { code: error.code, message: error.message });
    return started;
  });
  job.log.info({ runs: run_ids.length, queued: outcome.queued, started: outcome.started, refused: outcome.refused.length }, 'scheduled runs started');
}

/** The run's chat turn ended (this job is its continuation): how it ended, for the run's end. */
export async function finishScheduledRun({ run_id }: ScheduledTaskRunPayload, { deps }: JobContext): Promise<TurnOutcome | NothingToDo> {
  const run = await loadRun(deps.db, run_id);
  if (!run?.chat_run_id) return nothingToDo('the run has no chat turn');
  const chat = (await deps.db('chat_runs').where({ id: run.chat_run_id }).first()) as ChatRunRow;
  if (!(OPEN_RUN_STATES as readonly string[]).includes(run.status) && run.credits_used !== null) return nothingToDo('the run has ended');
  return { status: chat.status, credits: chat.credits_charged ?? 0, error: chat.error };
}

/**
 * Mails one recipient the run's answer — if they may still have it: a member of the organization
 * who can read the task now (removed members and recipients who lost access since the run was
 * queued get nothing).
 */
export async function emailRunAnswer({ run_id, user_id }: ScheduledTaskEmailPayload, { deps, log }: JobContext): Promise<void> {
  const run = await loadRun(deps.db, run_id);
  if (run?.status !== 'succeeded' || !run.chat_run_id) return;
  const readable = await actorFor(deps.db, { userId: user_id })
    .resource(deps.db, 'scheduled_task', run.task_id, 'read')
    .then(
      () => true,
      (error: unknown) => {
        if (isAppError(error, 'not_found')) return false;
        throw error;
      },
    );
  if (!readable) {
    log.info({ run_id, user_id }, 'scheduled answer not sent: the recipient can no longer read the task');
    return;
  }
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
