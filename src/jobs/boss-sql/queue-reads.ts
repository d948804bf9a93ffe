import type { Knex } from 'knex';
import { BOSS_SCHEMA } from '../boss.ts';
import { jobOfOrganizationSql, organizationOfJobSql } from '../origin.ts';

// Per-queue and per-organization readings of pg-boss's tables: queue health for the console, the
// tenant panel, the per-minute throughput snapshot and the queue gauges of /metrics.

const JOB = `${BOSS_SCHEMA}.job`;
const QUEUE = `${BOSS_SCHEMA}.queue`;

/**
 * Every queue with its dead-letter queue, by name. SQL rather than pg-boss's getQueues(): queue
 * health runs inside the console's statement-timeout transaction, and in processes (metrics) that
 * hold no pg-boss instance.
 */
export async function queueNames(db: Knex | Knex.Transaction): Promise<{ name: string; dead_letter: string | null }[]> {
  return (await db(QUEUE).select('name', 'dead_letter').orderBy('name')) as { name: string; dead_letter: string | null }[];
}

export interface CachedQueueCounts {
  name: string;
  queued: number;
  deferred: number;
  active: number;
  failed: number;
  total: number;
  /** When pg-boss's monitor last counted (null: never yet). */
  counted_at: Date | null;
}

/**
 * pg-boss's own per-state counts of every queue, cached on its queue table by its monitor pass (every
 * WORKER_SUPERVISE_INTERVAL_SECONDS): true as of `counted_at`, at no cost however large the table.
 * `queued` includes `deferred`; `total` is every job still in the table.
 */
export async function cachedQueueCounts(db: Knex | Knex.Transaction): Promise<CachedQueueCounts[]> {
  const { rows } = await db.raw(
    `SELECT name, queued_count AS queued, deferred_count AS deferred, active_count AS active, failed_count AS failed, total_count AS total, monitor_on AS counted_at
       FROM ${QUEUE}`,
  );
  return rows as CachedQueueCounts[];
}

export interface WaitingCount {
  name: string;
  state: 'created' | 'retry';
  /** Due now. */
  due: number;
  /** Pushed to later (start_after in the future: backoff, a delayed send, a pause). */
  deferred: number;
  /** Age in seconds of the oldest job due now. */
  oldest: number | null;
}

/**
 * Live counts per queue for queue health, all (organizationId null) or one organization's. Waiting
 * and running jobs are few and indexed (the console's open-jobs and active indexes, ./tables.ts:
 * pg-boss's fetch index leaves out blocked jobs, so it cannot answer these counts); finished ones are
 * counted over the last `hours` (the created_on index).
 */
export async function queueCounts(
  trx: Knex.Transaction,
  options: { organizationId: string | null; hours: number },
): Promise<{
  waiting: WaitingCount[];
  active: { name: string; n: number }[];
  finished: { name: string; state: 'completed' | 'cancelled' | 'failed'; n: number }[];
}> {
  const org = options.organizationId ? `AND ${jobOfOrganizationSql()}` : '';
  const orgBinding = options.organizationId ? [options.organizationId, options.organizationId] : [];
  const { rows: waiting } = await trx.raw(
    `SELECT name, state::text AS state, count(*) FILTER (WHERE start_after <= now())::int AS due, count(*) FILTER (WHERE start_after > now())::int AS deferred,
            extract(epoch FROM now() - min(created_on) FILTER (WHERE start_after <= now()))::float AS oldest
       FROM ${JOB} WHERE state < 'active' ${org} GROUP BY name, state`,
    orgBinding,
  );
  const { rows: active } = await trx.raw(`SELECT name, count(*)::int AS n FROM ${JOB} WHERE state = 'active' ${org} GROUP BY name`, orgBinding);
  const { rows: finished } = await trx.raw(
    `SELECT name, state::text AS state, count(*)::int AS n FROM ${JOB}
      WHERE created_on >= now() - make_interval(hours => ?) AND state > 'active' ${org} GROUP BY name, state`,
    [options.hours, ...orgBinding],
  );
  return { waiting, active, finished };
}

export interface OrganizationLoadRow {
  group_id: string;
  active: number;
  queued: number;
  failed_last_hour: number;
  queues: { queue: string; active: number; queued: number }[];
}

/**
 * Each organization's running and waiting jobs (the console's open-jobs index, ./tables.ts), noisiest
 * first, with the last hour's failed attempts from the throughput snapshot. Names are the
 * organizations domain's to give (src/operations/organizations.ts asks it).
 */
export async function organizationLoad(trx: Knex.Transaction, organizationId: string | null, limit: number): Promise<OrganizationLoadRow[]> {
  const only = organizationId ? `AND ${jobOfOrganizationSql('j')}` : '';
  // By organization, not pg-boss group: a webhook delivery is grouped by its endpoint and counts for its organization.
  const { rows } = await trx.raw(
    `WITH load AS (
       SELECT ${organizationOfJobSql('j')} AS group_id, name, count(*) FILTER (WHERE state = 'active')::int AS active, count(*) FILTER (WHERE state < 'active')::int AS queued
         FROM ${JOB} j
        WHERE state <= 'active' AND group_id IS NOT NULL ${only}
        GROUP BY 1, name
     ), totals AS (
       SELECT group_id, sum(active)::int AS active, sum(queued)::int AS queued,
              jsonb_agg(jsonb_build_object('queue', name, 'active', active, 'queued', queued) ORDER BY active DESC, queued DESC) AS queues
         FROM load GROUP BY group_id
        ORDER BY sum(active) DESC, sum(queued) DESC
        LIMIT ?
     )
     SELECT t.*,
            (SELECT coalesce(sum(failed), 0)::int FROM queue_throughput q
              WHERE q.organization_id = t.group_id AND q.minute >= now() - interval '1 hour') AS failed_last_hour
       FROM totals t
      ORDER BY t.active DESC, t.queued DESC, t.group_id`,
    [...(organizationId ? [organizationId, organizationId] : []), limit],
  );
  return rows as OrganizationLoadRow[];
}

/**
 * Recomputes the last few minutes of `queue_throughput` per queue and organization: jobs created
 * (the job table's created_on index) and attempts completed and failed (the rows of our attempt
 * history: an end its worker has yet to write — within 100 ms — is counted by the next recompute).
 */
export async function recordThroughput(db: Knex | Knex.Transaction): Promise<void> {
  await db.raw(
    `INSERT INTO queue_throughput (minute, queue, organization_id, created, completed, failed)
     SELECT minute, queue, organization_id, sum(created), sum(completed), sum(failed)
       FROM (
         SELECT date_trunc('minute', created_on) AS minute, name AS queue, coalesce(group_id, '') AS organization_id,
                count(*) AS created, 0 AS completed, 0 AS failed
           FROM ${JOB} WHERE created_on >= date_trunc('minute', now()) - interval '3 minutes'
          GROUP BY 1, 2, 3
         UNION ALL
         SELECT date_trunc('minute', ended_at), queue, coalesce(organization_id, ''),
                0, count(*) FILTER (WHERE outcome = 'completed'), count(*) FILTER (WHERE outcome IN ('failed', 'lost'))
           FROM job_attempt_records WHERE ended_at >= date_trunc('minute', now()) - interval '3 minutes' AND outcome <> 'deferred'
          GROUP BY 1, 2, 3
       ) counted
      GROUP BY 1, 2, 3
     ON CONFLICT (minute, queue, organization_id)
     DO UPDATE SET created = EXCLUDED.created, completed = EXCLUDED.completed, failed = EXCLUDED.failed`,
  );
}

export interface QueueDepthRow {
  name: string;
  ready: number;
  deferred: number;
  active: number;
  failed: number;
  stats_age_seconds: number | null;
  oldest_seconds: number | null;
}

/**
 * One statement whatever the number of queues or jobs:
 * - the depths are the counts pg-boss caches on its queue table (its monitor refreshes them every
 *   WORKER_SUPERVISE_INTERVAL_SECONDS); counting the job table at every scrape would cost a scan of
 *   each backlog, exactly when backlogs are large. `stats_age_seconds` says how old those counts are.
 * - the oldest ready job is read per queue through a LATERAL: `ORDER BY priority DESC, created_on
 *   LIMIT 1` on the fetch index job_i11 (name, priority DESC, created_on, start_after) WHERE state <
 *   'active' AND NOT blocked — the same index scan the fetch itself does, one row per queue. That is
 *   the head of the queue: the oldest waiting job while priorities are not used (the app sets none);
 *   with priorities, the oldest of the top priority (a true min(created_on) would scan the backlog).
 *   Jobs deferred to later (`start_after` in the future: delayed sends, retry backoff) are not late and
 *   are left out; `start_after` is an index key column, so they are skipped inside the index.
 */
export async function queueDepths(db: Knex | Knex.Transaction): Promise<QueueDepthRow[]> {
  const { rows } = await db.raw(`
    SELECT q.name,
           q.ready_count AS ready, q.deferred_count AS deferred, q.active_count AS active, q.failed_count AS failed,
           extract(epoch FROM now() - q.monitor_on)::float8 AS stats_age_seconds,
           extract(epoch FROM now() - head.created_on)::float8 AS oldest_seconds
      FROM ${QUEUE} q
      LEFT JOIN LATERAL (
        SELECT j.created_on
          FROM ${JOB} j
         WHERE j.name = q.name AND j.state < 'active' AND NOT j.blocked AND j.start_after <= now()
         ORDER BY j.priority DESC, j.created_on
         LIMIT 1
      ) head ON true`);
  return rows as QueueDepthRow[];
}

/**
 * Which of `queues` have a job fetchable now (queued or waiting to retry, due, not blocked): the
 * worker's poll (src/jobs/slots.ts) wakes a slot only for these — one statement for every queue
 * instead of an empty fetch per queue and slot. Each probe stops at the first row of pg-boss's
 * fetch index.
 */
export async function readyQueues(db: Knex, queues: readonly string[]): Promise<string[]> {
  if (queues.length === 0) return [];
  const { rows } = await db.raw(
    `SELECT q.name FROM unnest(?::text[]) AS q(name)
      WHERE EXISTS (SELECT 1 FROM ${JOB} j WHERE j.name = q.name AND j.state < 'active' AND NOT j.blocked AND j.start_after <= ${BOSS_SCHEMA}.job_now())`,
    [[...queues]],
  );
  return (rows as { name: string }[]).map((row) => row.name);
}
