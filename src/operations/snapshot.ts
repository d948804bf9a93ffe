import type { JobContext } from '../jobs/define.ts';
import { closeExpiredPauses } from '../jobs/pauses.ts';
import { BOSS_SCHEMA } from '../jobs/boss.ts';

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
  await db.raw(
    `INSERT INTO queue_throughput (minute, queue, organization_id, created, completed, failed)
     SELECT minute, queue, organization_id, sum(created), sum(completed), sum(failed)
       FROM (
         SELECT date_trunc('minute', created_on) AS minute, name AS queue, coalesce(group_id, '') AS organization_id,
                count(*) AS created, 0 AS completed, 0 AS failed
           FROM ??.job WHERE created_on >= date_trunc('minute', now()) - interval '3 minutes'
          GROUP BY 1, 2, 3
         UNION ALL
         SELECT date_trunc('minute', ended_at), queue, coalesce(organization_id, ''),
                0, count(*) FILTER (WHERE outcome = 'completed'), count(*) FILTER (WHERE outcome IN ('failed', 'lost'))
           FROM job_attempts WHERE ended_at >= date_trunc('minute', now()) - interval '3 minutes' AND outcome <> 'deferred'
          GROUP BY 1, 2, 3
       ) counted
      GROUP BY 1, 2, 3
     ON CONFLICT (minute, queue, organization_id)
     DO UPDATE SET created = EXCLUDED.created, completed = EXCLUDED.completed, failed = EXCLUDED.failed`,
    [BOSS_SCHEMA],
  );
  const closed = await closeExpiredPauses(db);
  if (closed > 0) log.info({ closed }, 'expired pauses closed');
  await db.raw(`DELETE FROM queue_throughput WHERE minute < now() - make_interval(days => ?)`, [THROUGHPUT_DAYS]);
  await db.raw(`DELETE FROM job_attempts WHERE id IN (SELECT id FROM job_attempts WHERE ended_at < now() - make_interval(days => ?) LIMIT 10000)`, [
    ATTEMPT_DAYS,
  ]);
}
