// Runs of scheduled tasks: their row, how they are created (one per slot, or per trigger) and shown.
import type { Knex } from 'knex';
import { recordEvent } from '../core/events.ts';
import { iso } from '../core/present.ts';
import type { Deps } from '../platform/deps.ts';
import { scheduledTaskRunJob, scheduledTaskStartJob } from './jobs.ts';
import type { ScheduledTaskRow } from './presenter.ts';

export const runStates = ['queued', 'running', 'succeeded', 'failed', 'canceled', 'skipped'] as const;
/** A run in these states has not ended. */
export const OPEN_RUN_STATES = ['queued', 'running'] as const;

export interface TaskRunRow {
  id: string;
  task_id: string;
  organization_id: string;
  trigger: 'schedule' | 'manual' | 'one_off';
  scheduled_for: Date;
  missed_slots: number;
  status: (typeof runStates)[number];
  prompt: string;
  model: string | null;
  email_recipients: string[];
  max_credits: number | null;
  requested_by_id: string | null;
  conversation_id: string | null;
  chat_run_id: string | null;
  credits_used: number | null;
  error: { code: string; message: string } | null;
  created_at: Date;
  started_at: Date | null;
  finished_at: Date | null;
}

export interface RunSettings {
  prompt?: string | undefined;
  model?: string | null | undefined;
  email_recipients?: string[] | undefined;
}

/**
 * Writes a run of the task with the task's settings (or the overrides) and enqueues it, in the
 * caller's transaction. A scheduled slot already taken (another dispatcher got there first) writes
 * nothing and returns null.
 */
export async function createRun(
  trx: Knex.Transaction,
  deps: Pick<Deps, 'jobs'>,
  task: ScheduledTaskRow,
  run: { trigger: TaskRunRow['trigger']; scheduledFor: Date; missedSlots?: number; requestedById?: string | null; overrides?: RunSettings },
): Promise<TaskRunRow | null> {
  const { rows } = await trx.raw(
    `INSERT INTO scheduled_task_runs (task_id, organization_id, trigger, scheduled_for, missed_slots, prompt, model, email_recipients, max_credits, requested_by_id)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT (task_id, scheduled_for) WHERE trigger = 'schedule' DO NOTHING
     RETURNING *`,
    [
      task.id,
      task.organization_id,
      run.trigger,
      run.scheduledFor,
      run.missedSlots ?? 0,
      run.overrides?.prompt ?? task.prompt,
      run.overrides?.model !== undefined ? run.overrides.model : task.model,
      run.overrides?.email_recipients ?? task.email_recipients,
      task.max_credits_per_run,
      run.requestedById ?? null,
    ],
  );
  const created = rows[0] as TaskRunRow | undefined;
  if (!created) return null;
  await deps.jobs.enqueue(trx, scheduledTaskRunJob, { run_id: created.id }, { organizationId: created.organization_id });
  return created;
}

/**
 * One run per task for its slot (the dispatcher's batch, ≤ 200), in one statement, and one job that
 * starts them all (scheduledTaskStartJob): a slot already taken by another dispatcher is skipped.
 * Returns how many were created.
 */
export async function createScheduledRuns(
  trx: Knex.Transaction,
  deps: Pick<Deps, 'jobs'>,
  planned: readonly { task: ScheduledTaskRow; slot: Date; missedSlots: number }[],
): Promise<number> {
  if (planned.length === 0) return 0;
  const records = planned.map(({ task, slot, missedSlots }) => ({
    task_id: task.id,
    organization_id: task.organization_id,
    scheduled_for: slot.toISOString(),
    missed_slots: missedSlots,
    prompt: task.prompt,
    model: task.model,
    email_recipients: task.email_recipients,
    max_credits: task.max_credits_per_run,
  }));
  const { rows } = await trx.raw(
    `INSERT INTO scheduled_task_runs (task_id, organization_id, trigger, scheduled_for, missed_slots, prompt, model, email_recipients, max_credits)
     SELECT x.task_id, x.organization_id, 'schedule', x.scheduled_for, x.missed_slots, x.prompt, x.model, x.email_recipients, x.max_credits
       FROM jsonb_to_recordset(?::jsonb) AS x(task_id uuid, organization_id text, scheduled_for timestamptz, missed_slots integer,
                                             prompt text, model text, email_recipients text[], max_credits integer)
     ON CONFLICT (task_id, scheduled_for) WHERE trigger = 'schedule' DO NOTHING
     RETURNING id`,
    [JSON.stringify(records)],
  );
  const runIds = (rows as { id: string }[]).map((r) => r.id);
  // One start job for the batch: starting runs a batch at a time is what lets a minute's thousands start within it.
  if (runIds.length > 0) await deps.jobs.enqueue(trx, scheduledTaskStartJob, { run_ids: runIds }, { organizationId: null });
  return runIds.length;
}

export function presentRun(row: TaskRunRow) {
  return {
    id: row.id,
    task_id: row.task_id,
    organization_id: row.organization_id,
    trigger: row.trigger,
    scheduled_for: row.scheduled_for.toISOString(),
    missed_slots: row.missed_slots,
    status: row.status,
    prompt: row.prompt,
    model: row.model,
    email_recipients: row.email_recipients,
    max_credits: row.max_credits,
    requested_by_id: row.requested_by_id,
    conversation_id: row.conversation_id,
    credits_used: row.credits_used,
    error: row.error,
    created_at: row.created_at.toISOString(),
    started_at: iso(row.started_at),
    finished_at: iso(row.finished_at),
  };
}

/**
 * Records how each of these just-ended runs ended (`scheduled_task.run.<status>`), in the
 * transaction that ended them; about the task, so whoever can read the task may see it.
 */
export async function recordRunsEnded(trx: Knex.Transaction, ended: readonly TaskRunRow[]): Promise<void> {
  for (const run of ended) {
    if (run.status === 'queued' || run.status === 'running') continue;
    await recordEvent(trx, {
      organizationId: run.organization_id,
      type: `scheduled_task.run.${run.status}`,
      subject: { type: 'scheduled_task', id: run.task_id },
      object: presentRun(run),
    });
  }
}
