import { Cron } from 'croner';
import { badRequest, notFound } from '../core/errors.ts';
import { encodeCursor, decodeCursor } from '../core/pagination.ts';
import type { z } from '../core/zod.ts';
import { lastCreatedOn } from '../jobs/boss-sql/index.ts';
import { cronSchedule, openPauses, type Pause } from '../jobs/pauses.ts';
import type { Deps } from '../platform/deps.ts';
import { taskIdOfScheduleKey, taskScheduleKey, triggerTaskRun } from '../scheduled-tasks/index.ts';
import type { ConsoleCaller } from './access.ts';
import { recordAction } from './audit.ts';
import { iso, presentPause } from './presenter.ts';
import type { scheduleSchema } from './schema.ts';
import { inTransaction } from '../db/transaction.ts';

type Schedule = z.input<typeof scheduleSchema>;

/**
 * Every cron schedule: the platform's own (job definitions with a cron; operators only) first, then
 * the scheduled tasks (an organization's for its admins), each with its last and next run and any
 * pause. Scheduled tasks are keyset paged by id; the platform's few come on the first page.
 */
export async function listSchedules(deps: Deps, caller: ConsoleCaller, page: { limit: number; cursor?: string | undefined }) {
  const pauses = (await openPauses(deps.db)).filter((p) => p.scope === 'schedule');
  const pauseOf = (key: string) => {
    const pause = pauses.find((p) => p.schedule === key);
    return pause ? presentPause(pause, caller) : null;
  };
  const platform: Schedule[] = [];
  if (caller.operator && !caller.organizationId && page.cursor === undefined)
    for (const job of deps.jobs.definitions.filter((j) => j.cron !== null)) {
      platform.push({
        key: cronSchedule(job.name),
        kind: 'platform',
        queue: job.name,
        organization_id: null,
        title: job.name,
        cron: job.cron!,
        timezone: 'UTC',
        enabled: true,
        last_run_at: iso(await lastCreatedOn(deps.db, job.name)),
        next_run_at: iso(new Cron(job.cron!, { timezone: 'UTC' }).nextRun()),
        paused: pauseOf(cronSchedule(job.name)),
      });
    }
  const after = page.cursor === undefined ? null : String(decodeCursor(page.cursor, 1)[0]);
  const query = deps
    .db('scheduled_tasks as t')
    .whereNull('t.deleted_at')
    .select('t.id', 't.organization_id', 't.title', 't.cron', 't.timezone', 't.enabled', 't.next_run_at')
    .select(deps.db.raw('(SELECT max(r.scheduled_for) FROM scheduled_task_runs r WHERE r.task_id = t.id) AS last_run_at'))
    .orderBy('t.id')
    .limit(page.limit + 1);
  if (caller.organizationId) query.where('t.organization_id', caller.organizationId);
  if (after) query.where('t.id', '>', after);
  const rows = (await query) as {
    id: string;
    organization_id: string;
    title: string;
    cron: string;
    timezone: string;
    enabled: boolean;
    next_run_at: Date | null;
    last_run_at: Date | null;
  }[];
  const tasks = rows.slice(0, page.limit).map(
    (row): Schedule => ({
      key: taskScheduleKey(row.id),
      kind: 'scheduled_task',
      queue: 'scheduled-tasks.dispatch.v1',
      organization_id: row.organization_id,
      title: row.title,
      cron: row.cron,
      timezone: row.timezone,
      enabled: row.enabled,
      last_run_at: iso(row.last_run_at),
      next_run_at: iso(row.next_run_at),
      paused: pauseOf(taskScheduleKey(row.id)),
    }),
  );
  return { items: [...platform, ...tasks], next_cursor: rows.length > page.limit ? encodeCursor([taskIdOfScheduleKey(tasks.at(-1)!.key)!]) : null };
}

/** The organization a schedule belongs to (null: the platform's), or 404 when there is no such schedule. */
export async function scheduleOwner(deps: Deps, key: string): Promise<string | null> {
  if (key.startsWith('cron:')) {
    if (!deps.jobs.definitions.some((job) => job.cron !== null && cronSchedule(job.name) === key)) throw notFound('schedule');
    return null;
  }
  const task = (await deps
    .db('scheduled_tasks')
    .where({ id: taskIdOfScheduleKey(key) })
    .whereNull('deleted_at')
    .first('organization_id')) as { organization_id: string } | undefined;
  if (!task) throw notFound('schedule');
  return task.organization_id;
}

/** Runs a schedule now, even while it is paused: a cron job marked as the operator's, or a manual run of the task. */
export async function triggerSchedule(deps: Deps, caller: ConsoleCaller, key: string, organizationId: string | null) {
  return inTransaction(deps.db, async (trx) => {
    let jobId: string | null = null;
    let runId: string | null = null;
    if (key.startsWith('cron:')) {
      const job = deps.jobs.definitions.find((j) => cronSchedule(j.name) === key)!;
      jobId = await deps.jobs.trigger(trx, job, caller.actorId);
    } else {
      const run = await triggerTaskRun(trx, deps, taskIdOfScheduleKey(key)!);
      if (!run) throw notFound('schedule');
      runId = run.id;
    }
    await recordAction(trx, caller, {
      action: 'schedule.trigger',
      organizationId,
      target: { schedule: key, run_id: runId },
      jobIds: jobId ? [jobId] : [],
      count: 1,
    });
    return { schedule: key, job_id: jobId, run_id: runId };
  });
}

/** A schedule key a pause may name: an existing platform cron or scheduled task. */
export async function requireSchedule(deps: Deps, key: string): Promise<string | null> {
  return scheduleOwner(deps, key).catch(() => {
    throw badRequest(`schedule: ${key} is not a schedule (see GET /ops/schedules)`, ['schedule']);
  });
}

export type { Pause };
