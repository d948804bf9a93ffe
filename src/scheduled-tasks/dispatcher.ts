/**
 * The dispatcher: every minute (a pg-boss cron job, on whichever worker gets it), claim the due
 * tasks and fire each one's slot exactly once. Claiming takes the task rows with
 * `FOR UPDATE SKIP LOCKED`, so concurrent dispatchers split the due tasks instead of waiting; the
 * run is unique per task and slot, and `next_run_at` moves past `now` in the same transaction (a
 * batch of tasks in a few statements) — so
 * however many dispatchers and restarts, a slot fires once. After downtime the missed slots fold
 * into one run (`missed_slots` says how many), never a storm.
 */
import { scheduleNotPausedSql } from '../jobs/pauses.ts';
import type { Deps } from '../platform/deps.ts';
import type { ScheduledTaskRow } from './presenter.ts';
import { taskScheduleKeySql } from './schedule-key.ts';
import { scheduleOf } from './presenter.ts';
import { createScheduledRuns } from './runs.ts';
import { nextRunAfter, slotsBetween } from './schedule.ts';
import { inTransaction } from '../db/transaction.ts';

const BATCH = 200;

/** Fires every due slot as of `now` (injectable: tests drive the clock); returns how many runs were created. */
export async function dispatchDueTasks(deps: Pick<Deps, 'db' | 'jobs'>, now: Date): Promise<number> {
  let created = 0;
  // Tasks sharing a schedule and a due slot share the (CPU-bound) slot arithmetic: many do ("every day at 9").
  const plans = new Map<string, { slots: ReturnType<typeof slotsBetween>; next: Date | null }>();
  const planOf = (task: ScheduledTaskRow) => {
    const key = `${task.cron}\u0000${task.timezone}\u0000${task.next_run_at!.getTime()}`;
    let plan = plans.get(key);
    if (!plan) {
      const schedule = scheduleOf(task);
      // Every slot from next_run_at to now: the latest is run, the others are reported as missed.
      plan = { slots: slotsBetween(schedule, new Date(task.next_run_at!.getTime() - 1), now), next: nextRunAfter(schedule, now) };
      plans.set(key, plan);
    }
    return plan;
  };
  for (;;) {
    const claimed = await inTransaction(deps.db, async (trx) => {
      const { rows } = (await trx.raw(
        `SELECT * FROM scheduled_tasks
          WHERE next_run_at <= ? AND deleted_at IS NULL AND enabled AND ${scheduleNotPausedSql(taskScheduleKeySql('scheduled_tasks.id'))}
          ORDER BY next_run_at
          LIMIT ? FOR UPDATE SKIP LOCKED`,
        [now, BATCH],
      )) as { rows: ScheduledTaskRow[] };
      const planned = rows.map((task) => {
        const { slots, next } = planOf(task);
        return { task, slot: slots.latest ?? task.next_run_at!, missedSlots: Math.max(0, slots.count - 1), next };
      });
      created += await createScheduledRuns(trx, deps, planned);
      await trx.raw(
        `UPDATE scheduled_tasks t SET next_run_at = x.next
           FROM jsonb_to_recordset(?::jsonb) AS x(id uuid, next timestamptz) WHERE t.id = x.id`,
        [JSON.stringify(planned.map((p) => ({ id: p.task.id, next: p.next?.toISOString() ?? null })))],
      );
      return rows.length;
    });
    if (claimed < BATCH) return created;
  }
}
