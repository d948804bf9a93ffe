import type { PgBoss } from 'pg-boss';
import { BOSS_SCHEMA } from '../boss.ts';
import { ORGANIZATION_KEY } from '../origin.ts';

// Claims that write their attempt: a worker's fetch and the start of each attempt it fetched in one
// statement. The attempt history must hold every attempt a SIGKILL interrupts, credited to the worker
// that ran it, so the start has to be written before the handler runs; as its own statement it was
// one more round trip per job than raw pg-boss (bench:job-throughput on a quiet machine: 0.54× raw
// then, 0.77× with the start in the claim). Written by the claim itself, the start also closes the
// window in which a worker killed between its fetch and its first write left an attempt unrecorded.

/** pg-boss's fetch (plans.fetchNextJob): one UPDATE that marks the jobs it picked active and returns them. */
const FETCH = new RegExp(
  `^\\s*WITH[\\s\\S]*\\bUPDATE ${BOSS_SCHEMA}\\.\\w+ j SET\\s+state = 'active',\\s+started_on = ${BOSS_SCHEMA}\\.job_now\\(\\),[\\s\\S]*\\bRETURNING j\\.id, name, data, retry_count as "retryCount", [^;]*"groupId"[^;]*$`,
);
/** The queue a fetch reads (pg-boss inlines it). */
const FETCHED_QUEUE = /\bj\.name = '([^']+)'/;
/**
 * pg-boss's restore (plans.restoreJobs): jobs a worker fetched beyond its local group limit go back
 * to the queue unstarted, to be claimed again under the same attempt number.
 */
const RESTORE = new RegExp(
  `^\\s*UPDATE ${BOSS_SCHEMA}\\.\\w+\\s+SET state = 'created',\\s+started_on = NULL,\\s+heartbeat_on = NULL\\s+WHERE name = \\$1\\s+AND id = ANY\\(\\$2::uuid\\[\\]\\)\\s*$`,
);

/** The column a recorded claim adds to each job it returns (the runtime then writes no start of its own). */
export const CLAIM_RECORDED = 'attemptRecorded';

/**
 * pg-boss's fetch of one of `queues`, extended to write each claimed attempt's start (`job_attempts`,
 * no end yet) for `workerId` in the same statement, so no attempt of such a claim goes unrecorded;
 * pg-boss's restore of fetched jobs, extended to take back the starts their claim wrote; null for
 * any other statement. The original is kept whole as the first CTE, so its
 * locking, ordering and group limits are pg-boss's own.
 */
export function claimRecordingAttempts(
  text: string,
  values: unknown[] | undefined,
  workerId: string,
  queues?: ReadonlySet<string>,
): { text: string; values: unknown[] } | null {
  const params = values ?? [];
  const worker = `$${params.length + 1}::uuid`;
  if (RESTORE.test(text))
    return {
      text: `WITH restored AS (${text} RETURNING id, retry_count)
        DELETE FROM job_attempts a USING restored r
         WHERE a.job_id = r.id AND a.attempt = r.retry_count AND a.worker_id = ${worker} AND a.ended_at IS NULL`,
      values: [...params, workerId],
    };
  if (!FETCH.test(text)) return null;
  const queue = FETCHED_QUEUE.exec(text)?.[1];
  if (queues && (!queue || !queues.has(queue))) return null;
  // The job row's retry limit comes back too: a snooze raises it, so the kind's policy may understate it.
  const fetch = /"retryLimit"/.test(text) ? text : text.replace(/\bRETURNING j\.id, /, 'RETURNING j.retry_limit as "retryLimit", j.id, ');
  return {
    text: `WITH claimed AS (${fetch}),
      started AS (
        INSERT INTO job_attempts (job_id, queue, organization_id, attempt, worker_id, started_at)
        SELECT c.id, c.name, coalesce(c.data ->> '${ORGANIZATION_KEY}', c."groupId"), c."retryCount", ${worker}, now() FROM claimed c
        ON CONFLICT DO NOTHING
      )
      SELECT c.*, true AS "${CLAIM_RECORDED}" FROM claimed c`,
    values: [...params, workerId],
  };
}

/**
 * Makes every fetch of `queues` by this pg-boss instance (a worker's) a claim that writes its
 * attempts for `workerId`; pg-boss's own internal queues, which no runtime runs, are left as they are.
 */
export function recordClaims(boss: PgBoss, workerId: string, queues: readonly string[]): void {
  const db = boss.getDb();
  const execute = db.executeSql.bind(db);
  const runs = new Set(queues);
  db.executeSql = (text: string, values?: unknown[]) => {
    const claim = claimRecordingAttempts(text, values, workerId, runs);
    return claim ? execute(claim.text, claim.values) : execute(text, values);
  };
}
