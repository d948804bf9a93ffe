import type { Knex } from 'knex';
import { Gauge, type Registry } from 'prom-client';
import type { Logger } from '../platform/logger.ts';
import { softReading } from './cached.ts';

interface QueueRow {
  name: string;
  ready: number;
  deferred: number;
  active: number;
  failed: number;
  stats_age_seconds: number | null;
  oldest_seconds: number | null;
}

/**
 * One statement per refresh, whatever the number of queues or jobs:
 * - the depths are the counts pg-boss caches on `pgboss.queue` (its monitor refreshes them every
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
const queueSql = (schema: string) => `
  SELECT q.name,
         q.ready_count AS ready, q.deferred_count AS deferred, q.active_count AS active, q.failed_count AS failed,
         extract(epoch FROM now() - q.monitor_on)::float8 AS stats_age_seconds,
         extract(epoch FROM now() - head.created_on)::float8 AS oldest_seconds
    FROM ${schema}.queue q
    LEFT JOIN LATERAL (
      SELECT j.created_on
        FROM ${schema}.job j
       WHERE j.name = q.name AND j.state < 'active' AND NOT j.blocked AND j.start_after <= now()
       ORDER BY j.priority DESC, j.created_on
       LIMIT 1
    ) head ON true`;

export interface QueueMetricsOptions {
  /** pg-boss's schema (src/jobs/boss.ts BOSS_SCHEMA). */
  schema?: string;
  /** How long one reading serves scrapes (several Prometheus servers scrape every process). */
  cacheMs?: number;
  log?: Logger;
}

/**
 * Collect-time gauges of pg-boss's queues: `job_queue_depth{queue,state}` (state: ready, deferred,
 * active, failed — disjoint, so they sum), `job_queue_oldest_seconds{queue}` and
 * `job_queue_stats_age_seconds{queue}`. They describe the shared database, so every process exposing
 * them reports the same values: aggregate with max(), not sum().
 */
export function registerQueueMetrics(registry: Registry, db: Knex, options: QueueMetricsOptions = {}): void {
  const sql = queueSql(options.schema ?? 'pgboss');
  // A failed reading leaves these series out of the scrape (counted in metrics_collector_errors_total).
  const read = softReading(registry, 'queues', async () => (await db.raw(sql)).rows as QueueRow[], [], options);
  new Gauge({
    name: 'job_queue_depth',
    help: 'Jobs in each pg-boss queue by state (ready, deferred, active, failed), as pg-boss last counted them',
    labelNames: ['queue', 'state'],
    registers: [registry],
    async collect() {
      const rows = await read();
      this.reset();
      for (const row of rows) {
        for (const state of ['ready', 'deferred', 'active', 'failed'] as const) this.set({ queue: row.name, state }, Number(row[state]));
      }
    },
  });
  new Gauge({
    name: 'job_queue_oldest_seconds',
    help: 'Age of the job at the head of each queue that is ready to run (0 when none waits)',
    labelNames: ['queue'],
    registers: [registry],
    async collect() {
      const rows = await read();
      this.reset();
      for (const row of rows) this.set({ queue: row.name }, Math.max(0, row.oldest_seconds ?? 0));
    },
  });
  new Gauge({
    name: 'job_queue_stats_age_seconds',
    help: "Age of pg-boss's cached counts behind job_queue_depth (refreshed by the workers' monitor pass)",
    labelNames: ['queue'],
    registers: [registry],
    async collect() {
      const rows = await read();
      this.reset();
      for (const row of rows) if (row.stats_age_seconds !== null) this.set({ queue: row.name }, row.stats_age_seconds);
    },
  });
}
