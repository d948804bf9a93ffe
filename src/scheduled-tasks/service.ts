import type { Knex } from 'knex';
import { type Actor, actorFor, changeLive, recordLifecycle, listReadable, requireProjectToFileInto, restore, softDelete } from '../access/index.ts';
import { requireAvailableChatModel } from '../chat-models/index.ts';
import { recordActivity } from '../core/activity.ts';
import { badRequest, isAppError } from '../core/errors.ts';
import type { Page } from '../core/pagination.ts';
import type { z } from '../core/zod.ts';
import { membersAmong } from '../members/index.ts';
import { type Deps, onTransaction } from '../platform/deps.ts';
import { scheduledTaskColumns, type ScheduledTaskRow, scheduleOf } from './presenter.ts';
import { nextRunAfter, type Schedule, validateSchedule } from './schedule.ts';
import type { createScheduledTaskBody, listScheduledTasksQuery, updateScheduledTaskBody } from './schema.ts';
import { inTransaction } from '../db/transaction.ts';
import { requireCapAuthority } from './run-credits.ts';

const type = 'scheduled_task';
const returning = [...scheduledTaskColumns];

/** The next slot after now, or null while the task does not run. */
const nextRunOf = (schedule: Schedule, enabled: boolean, now: Date) => (enabled ? nextRunAfter(schedule, now) : null);

/** The rules a task's settings keep, checked on create and on every change of them (400 naming the field). */
export async function checkSettings(
  deps: Pick<Deps, 'config' | 'db'>,
  actor: Actor,
  organizationId: string,
  settings: { schedule?: Schedule; model?: string | null; skill_id?: string | null; email_recipients?: readonly string[] },
): Promise<void> {
  if (settings.schedule) validateSchedule(settings.schedule, { minIntervalSeconds: deps.config.SCHEDULED_TASK_MIN_INTERVAL_SECONDS });
  if (settings.model) await requireAvailableChatModel(deps, settings.model, organizationId);
  if (settings.skill_id) {
    const refused = badRequest(`skill_id: no skill ${settings.skill_id} that you can read in this organization`, ['skill_id']);
    const { row } = await actor.resource(deps.db, 'skill', settings.skill_id, 'read').catch((error: unknown) => {
      throw isAppError(error, 'not_found') ? refused : error;
    });
    if (row.organization_id !== organizationId || row.deleted_at !== null) throw refused;
  }
  if (settings.email_recipients?.length) {
    const wanted = [...new Set(settings.email_recipients)];
    const members = new Set((await membersAmong(deps.db, organizationId, wanted)).map((m) => m.user_id));
    const outsiders = wanted.filter((id) => !members.has(id));
    if (outsiders.length)
      throw badRequest(`email_recipients: ${outsiders.join(', ')} ${outsiders.length === 1 ? 'is not a member' : 'are not members'} of the organization`, [
        'email_recipients',
      ]);
  }
}

/**
 * Every recipient must be able to read the task, since its answers go out to them: 400 naming
 * `email_recipients` otherwise (in the writing transaction, so the task as it is being written counts).
 */
export async function requireRecipientsCanRead(db: Knex, taskId: string, recipients: readonly string[]): Promise<void> {
  const unable: string[] = [];
  for (const userId of new Set(recipients)) {
    const readable = await actorFor(db, { userId })
      .resource(db, type, taskId, 'read')
      .then(
        () => true,
        (error: unknown) => {
          if (isAppError(error, 'not_found')) return false;
          throw error;
        },
      );
    if (!readable) unable.push(userId);
  }
  if (unable.length)
    throw badRequest(
      `email_recipients: ${unable.join(', ')} cannot read this scheduled task (share it with ${unable.length === 1 ? 'them' : 'each'} first, or make it visible to the workspace)`,
      ['email_recipients'],
    );
}

export async function createScheduledTask(
  deps: Pick<Deps, 'config' | 'db'>,
  actor: Actor,
  input: z.output<typeof createScheduledTaskBody>,
): Promise<ScheduledTaskRow> {
  await checkSettings(deps, actor, input.organization_id, input);
  const enabled = input.enabled ?? true;
  return inTransaction(deps.db, async (trx) => {
    if (input.project_id) await requireProjectToFileInto(trx, actor, input.organization_id, input.project_id);
    const [task] = (await trx('scheduled_tasks')
      .insert({
        organization_id: input.organization_id,
        created_by_id: actor.userId,
        title: input.title,
        prompt: input.prompt,
        cron: input.schedule.cron,
        timezone: input.schedule.timezone,
        model: input.model ?? null,
        skill_id: input.skill_id ?? null,
        project_id: input.project_id ?? null,
        email_recipients: [...new Set(input.email_recipients ?? [])],
        max_credits_per_run: input.max_credits_per_run ?? null,
        enabled,
        next_run_at: nextRunOf(input.schedule, enabled, new Date()),
        visibility: input.visibility ?? 'private',
        workspace_role: input.workspace_role ?? 'viewer',
      })
      .returning(returning)) as ScheduledTaskRow[];
    await requireRecipientsCanRead(trx, task!.id, task!.email_recipients);
    await recordLifecycle(trx, actor, type, task!, 'created', { title: task!.title, cron: task!.cron, timezone: task!.timezone });
    return task!;
  });
}

export async function getScheduledTask(deps: Pick<Deps, 'db'>, actor: Actor, id: string): Promise<ScheduledTaskRow> {
  return (await actor.resource<ScheduledTaskRow>(deps.db, type, id, 'read')).row;
}

export function listScheduledTasks(deps: Pick<Deps, 'db'>, actor: Actor, query: z.output<typeof listScheduledTasksQuery>): Promise<Page<ScheduledTaskRow>> {
  return listReadable<ScheduledTaskRow>(deps.db, actor, type, query, { alias: 't', columns: scheduledTaskColumns, searchColumns: ['title'] });
}

/** Editors change it; a new schedule or enabling recomputes the next slot from now, disabling clears it at once. */
export async function updateScheduledTask(
  deps: Pick<Deps, 'config' | 'db'>,
  actor: Actor,
  id: string,
  changes: z.output<typeof updateScheduledTaskBody>,
): Promise<ScheduledTaskRow> {
  const { row: current, role } = await actor.resource<ScheduledTaskRow>(deps.db, type, id, 'read');
  await checkSettings(deps, actor, current.organization_id, changes);
  return changeLive<ScheduledTaskRow>(deps, actor, type, id, async (trx, before) => {
    if (changes.max_credits_per_run !== undefined)
      await requireCapAuthority(onTransaction(deps, trx), role, before, {
        prompt: changes.prompt ?? before.prompt,
        model: changes.model !== undefined ? changes.model : before.model,
        maxCredits: changes.max_credits_per_run,
      });
    const { schedule, email_recipients, ...rest } = changes;
    const next = schedule ?? scheduleOf(before);
    const enabled = changes.enabled ?? before.enabled;
    const reschedules = schedule !== undefined || changes.enabled !== undefined;
    const [task] = (await trx('scheduled_tasks')
      .where({ id })
      .update({
        ...rest,
        ...(schedule && { cron: schedule.cron, timezone: schedule.timezone }),
        ...(email_recipients && { email_recipients: [...new Set(email_recipients)] }),
        ...(reschedules && { next_run_at: nextRunOf(next, enabled, new Date()) }),
        updated_at: trx.fn.now(),
      })
      .returning(returning)) as ScheduledTaskRow[];
    if (email_recipients) await requireRecipientsCanRead(trx, id, task!.email_recipients);
    await recordActivity(trx, {
      organizationId: before.organization_id,
      actorId: actor.userId,
      action: 'scheduled_task.updated',
      subjectType: type,
      subjectId: id,
      data: { after: changes },
    });
    return task!;
  });
}

/** Soft delete: the dispatcher claims only live tasks, so no slot fires after this commits. */
export const deleteScheduledTask = (deps: Pick<Deps, 'db'>, actor: Actor, id: string) => softDelete<ScheduledTaskRow>(deps, actor, type, id);

/** Restored tasks resume from the next slot after now: the slots missed while deleted are not caught up. */
export const restoreScheduledTask = (deps: Pick<Deps, 'db'>, actor: Actor, id: string) =>
  restore<ScheduledTaskRow>(deps, actor, type, id, { returning, reset: (row) => ({ next_run_at: nextRunOf(scheduleOf(row), row.enabled, new Date()) }) });

/** The recipients of a task's e-mails who are still members, with their e-mail and name. */
export async function taskRecipients(deps: Pick<Deps, 'db'>, actor: Actor, id: string) {
  const task = await getScheduledTask(deps, actor, id);
  const members = await membersAmong(deps.db, task.organization_id, task.email_recipients);
  const byId = new Map(members.map((m) => [m.user_id, m]));
  return { items: task.email_recipients.flatMap((userId) => (byId.has(userId) ? [byId.get(userId)!] : [])) };
}
