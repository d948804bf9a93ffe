// Starting queued runs: one (a manual or one-off run's own job) or a batch at once (the dispatcher's), the same way.
import type { Knex } from 'knex';
import { actorFor } from '../access/index.ts';
import { openScheduledConversation, openScheduledTurns, type ScheduledTurnStart, startScheduledTurn } from '../conversations/index.ts';
import { type AppError, forbidden, isAppError } from '../core/errors.ts';
import type { Deps } from '../platform/deps.ts';
import { endUnstartedRuns, TASK_STOPPED } from './ends.ts';
import { scheduledTaskFinishJob } from './jobs.ts';
import { payerOf } from './run-credits.ts';
import type { TaskRunRow } from './runs.ts';

/** A queued run with what starting it reads of its task (null: the task is gone). */
interface QueuedRun extends TaskRunRow {
  task_title: string | null;
  task_enabled: boolean | null;
  task_deleted_at: Date | null;
  task_created_by_id: string | null;
  task_skill_id: string | null;
}

export interface RunsStarted {
  /** Runs still queued when the start began (the others had started or ended: nothing to do for them). */
  queued: number;
  started: number;
  /** Runs whose start was refused (the creator's access, the skill, the model): the caller fails them with the reason. */
  refused: { runId: string; error: AppError }[];
}

/** Whom a run acts as and charges (./run-credits.ts): whoever triggered it, else the task's creator. */
const payerOfRun = (run: QueuedRun) => payerOf(run, { created_by_id: run.task_created_by_id! });

const titleOf = (run: QueuedRun) => `${run.task_title} · ${run.scheduled_for.toISOString().slice(0, 16).replace('T', ' ')} UTC`;

/** The conversation a run opens and what its turn asks: the same in a batch and one at a time. */
const turnOf = (run: QueuedRun, skillBody: string | null) => ({
  organizationId: run.organization_id,
  scheduleId: run.task_id,
  title: titleOf(run),
  prompt: run.prompt,
  model: run.model,
  maxCredits: run.max_credits,
  skillBody,
});

/**
 * Starts the queued runs among `runIds` in the caller's transaction (the start job's step, under
 * its lease): each run's conversation with the skill and the prompt, its chat run (whose end
 * continues the run) and its row moved to `running` — for a batch in a few statements in all
 * (conversations/scheduled.ts openScheduledTurns). The run rows are locked and only `queued` ones
 * are started, so a retry after a crash finds each run started or not, never half. A run whose task
 * was disabled or deleted is canceled. Each run acts as its payer (whoever triggered it, else the
 * task's creator). A run the batch cannot start as it is (the payer's access or the model refused) is started one at a time in a savepoint, which says why it cannot.
 */
export async function startQueuedRuns(trx: Knex.Transaction, deps: Deps, runIds: readonly string[]): Promise<RunsStarted> {
  const { rows } = (await trx.raw(
    `SELECT r.*, t.title AS task_title, t.enabled AS task_enabled, t.deleted_at AS task_deleted_at, t.created_by_id AS task_created_by_id, t.skill_id AS task_skill_id
       FROM scheduled_task_runs r LEFT JOIN scheduled_tasks t ON t.id = r.task_id
      WHERE r.id = ANY(?::uuid[]) AND r.status = 'queued'
      ORDER BY r.id
        FOR UPDATE OF r`,
    [[...runIds]],
  )) as { rows: QueuedRun[] };
  // Disabling or deleting the task stops its queued scheduled runs too.
  const stopped = rows.filter((run) => run.task_created_by_id === null || run.task_deleted_at || (run.trigger === 'schedule' && !run.task_enabled));
  await endUnstartedRuns(
    trx,
    stopped.map((run) => run.id),
    'canceled',
    TASK_STOPPED,
  );
  const live = rows.filter((run) => !stopped.includes(run));

  // The skill as the payer can read it now, decided once per payer and skill (undefined: refused).
  const joined = { ...deps, db: trx as unknown as Deps['db'] };
  const skills = new Map<string, Promise<string | null | undefined>>();
  const skillOf = (run: QueuedRun) => {
    if (!run.task_skill_id) return Promise.resolve(null);
    const key = `${payerOfRun(run)}\u0000${run.task_skill_id}`;
    let body = skills.get(key);
    if (!body) {
      body = actorFor(trx, { userId: payerOfRun(run) })
        .resource<{ body: string }>(trx, 'skill', run.task_skill_id, 'read')
        .then(
          (access) => access.row.body,
          (error: unknown) => {
            if (isAppError(error)) return undefined;
            throw error;
          },
        );
      skills.set(key, body);
    }
    return body;
  };
  const turns: ScheduledTurnStart[] = [];
  for (const run of live) {
    const skillBody = await skillOf(run);
    if (skillBody === undefined) continue;
    turns.push({
      ...turnOf(run, skillBody),
      key: run.id,
      userId: payerOfRun(run),
      continueWith: { job: scheduledTaskFinishJob, payload: { run_id: run.id } },
    });
  }
  const opened = await openScheduledTurns(trx, deps, turns);
  if (opened.size > 0)
    await trx.raw(
      `UPDATE scheduled_task_runs r SET status = 'running', started_at = now(), conversation_id = x.conversation_id, chat_run_id = x.chat_run_id
         FROM jsonb_to_recordset(?::jsonb) AS x(id uuid, conversation_id uuid, chat_run_id uuid) WHERE r.id = x.id`,
      [JSON.stringify([...opened].map(([id, turn]) => ({ id, conversation_id: turn.conversationId, chat_run_id: turn.chatRunId })))],
    );

  const refused: RunsStarted['refused'] = [];
  let started = opened.size;
  for (const run of live.filter((candidate) => !opened.has(candidate.id))) {
    try {
      await trx.transaction((savepoint) => startOne(savepoint, { ...joined, db: savepoint as unknown as Deps['db'] }, run));
      started += 1;
    } catch (error) {
      if (!isAppError(error)) throw error;
      refused.push({ runId: run.id, error });
    }
  }
  return { queued: rows.length, started, refused };
}

/** One run, one step at a time, as its payer: the checks a batch skipped say here why the run cannot start. */
async function startOne(trx: Knex.Transaction, deps: Deps, run: QueuedRun): Promise<void> {
  // The run acts as its payer: their access and spending limit apply.
  const actor = actorFor(trx, { userId: payerOfRun(run) });
  // Said plainly, not as the "conversation not found" the first step would answer a non-member.
  if (!(await actor.viewer(run.organization_id)))
    throw forbidden(
      `the run acts as ${actor.userId} (${run.trigger === 'schedule' || run.requested_by_id === null ? 'the task’s creator' : 'who triggered it'}), who is no longer a member of the organization`,
    );
  // The skill as the payer can read it now (a skill they cannot read fails the run, saying so).
  const skill = run.task_skill_id ? (await actor.resource<{ body: string }>(trx, 'skill', run.task_skill_id, 'read')).row : null;
  const conversationId = await openScheduledConversation(deps, actor, turnOf(run, skill?.body ?? null));
  const chat = await startScheduledTurn(
    deps,
    actor,
    conversationId,
    { model: run.model, maxCredits: run.max_credits },
    { job: scheduledTaskFinishJob, payload: { run_id: run.id } },
  );
  await trx('scheduled_task_runs')
    .where({ id: run.id })
    .update({ status: 'running', started_at: trx.fn.now(), conversation_id: conversationId, chat_run_id: chat.id });
}
