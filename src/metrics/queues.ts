import type { Knex } from 'knex';
import { Gauge, type Registry } from 'prom-client';
import { queueDepths, stuckAttempts } from '../jobs/boss-sql/index.ts';
import type { Logger } from '../platform/logger.ts';
import { softReading } from './cached.ts';

export interface QueueMetricsOptions {
  /** How long one reading serves scrapes (several Prometheus servers scrape every process). */
  cacheMs?: number;
  log?: Logger;
  /** A worker counts as live with a heartbeat this recent (WORKER_LOST_AFTER_SECONDS): only its attempts can be stuck. */
  liveWithinSeconds: number;
}

/**
 * Collect-time gauges of pg-boss's queues: `job_queue_depth{queue,state}` (state: ready, deferred,
 * active, failed — disjoint, so they sum), `job_queue_oldest_seconds{queue}`,
 * `job_queue_stats_age_seconds{queue}` and `job_queue_stuck_attempts{queue}`. They describe the shared
 * database, so every process exposing them reports the same values: aggregate with max(), not sum().
 */
export function registerQueueMetrics(registry: Registry, db: Knex, options: QueueMetricsOptions): void {
  // One statement per refresh, whatever the number of queues or jobs (queueDepths says how).
  // A failed reading leaves these series out of the scrape (counted in metrics_collector_errors_total).
  const read = softReading(registry, 'queues', () => queueDepths(db), [], options);
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
  // Running attempts are few and reached through the console's active index: one cheap statement per refresh.
  const stuck = softReading(registry, 'stuck', () => stuckAttempts(db, { organizationId: null, liveWithinSeconds: options.liveWithinSeconds }), [], options);
  new Gauge({
    name: 'job_queue_stuck_attempts',
    help: "Attempts running longer than their job kind's expected time (expectedSeconds) on a live worker, per queue",
    labelNames: ['queue'],
    registers: [registry],
    async collect() {
      const [rows, attempts] = await Promise.all([read(), stuck()]);
      this.reset();
      for (const row of rows) if (!row.name.endsWith('.dead')) this.set({ queue: row.name }, attempts.filter((attempt) => attempt.name === row.name).length);
    },
  });
}
