/**
 * The dispatcher: every minute (a pg-boss cron job, on whichever worker gets it), claim the due
 * tasks and fire each one's slot exactly once. Claiming takes the task rows with
 * `FOR UPDATE SKIP LOCKED`, so concurrent dispatchers split the due tasks instead of waiting; the
 * run is unique per task and slot, and `next_run_at` moves past `now` in the same transaction — so
 * however many dispatchers and restarts, a slot fires once. After downtime the missed slots fold
 * into one run (`missed_slots` says how many), never a storm.
 */
import type { Deps } from '../platform/deps.ts';
import type { ScheduledTaskRow } from './presenter.ts';
import { scheduleOf } from './presenter.ts';
import { createRun } from './runs.ts';
import { nextRunAfter, slotsBetween } from './schedule.ts';

const BATCH = 200;

/** Fires every due slot as of `now` (injectable: tests drive the clock); returns how many runs were created. */
export async function dispatchDueTasks(deps: Pick<Deps, 'db' | 'jobs'>, now: Date): Promise<number> {
  let created = 0;
  for (;;) {
    const claimed = await deps.db.transaction(async (trx) => {
      const { rows } = (await trx.raw(
        `SELECT * FROM scheduled_tasks
          WHERE next_run_at <= ? AND deleted_at IS NULL AND enabled
          ORDER BY next_run_at
          LIMIT ? FOR UPDATE SKIP LOCKED`,
        [now, BATCH],
      )) as { rows: ScheduledTaskRow[] };
      for (const task of rows) {
        const schedule = scheduleOf(task);
        // Every slot from next_run_at to now: the latest is run, the others are reported as missed.
        const slots = slotsBetween(schedule, new Date(task.next_run_at!.getTime() - 1), now);
        const slot = slots.latest ?? task.next_run_at!;
        const run = await createRun(trx, deps, task, { trigger: 'schedule', scheduledFor: slot, missedSlots: Math.max(0, slots.count - 1) });
        if (run) created++;
        await trx('scheduled_tasks')
          .where({ id: task.id })
          .update({ next_run_at: nextRunAfter(schedule, now) });
      }
      return rows.length;
    });
    if (claimed < BATCH) return created;
  }
}
