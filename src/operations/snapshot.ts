import type { JobContext } from '../jobs/define.ts';
import { closeExpiredPauses } from '../jobs/pauses.ts';
import { recordThroughput } from '../jobs/boss-sql/index.ts';

/** History kept for charts and attempt timelines (pg-boss deletes finished jobs after their queue's retention, 7 days by default). */
const THROUGHPUT_DAYS = 7;
const ATTEMPT_DAYS = 14;

/**
 * The console's periodic snapshot (every minute, on one worker — pg-boss sends each cron run
 * once): recomputes the last few minutes of per-minute throughput per queue and organization —
 * jobs created (from the job table's created_on index), attempts completed and failed (from the
 * attempt history) — so the charts read a small table instead of the job table; closes expired
 * pauses; trims old history in bounded batches.
 */
export async function takeSnapshot(_payload: Record<string, never>, { deps, log }: JobContext): Promise<void> {
  const { db } = deps;
  await recordThroughput(db);
  const closed = await closeExpiredPauses(db);
  if (closed > 0) log.info({ closed }, 'expired pauses closed');
  await db.raw(`DELETE FROM queue_throughput WHERE minute < now() - make_interval(days => ?)`, [THROUGHPUT_DAYS]);
  await db.raw(
    `DELETE FROM job_attempt_records WHERE id IN (SELECT id FROM job_attempt_records WHERE ended_at < now() - make_interval(days => ?) LIMIT 10000)`,
    [ATTEMPT_DAYS],
  );
}
