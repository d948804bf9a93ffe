import { Gauge, type Registry } from 'prom-client';
import type { Logger } from '../platform/logger.ts';
import { softReading } from './cached.ts';

export interface QueueAlert {
  queue: string;
  kind: string;
  value: number;
  threshold: number;
}

/**
 * `job_queue_alert{queue,kind}` = the alert's measured value (backlog age in seconds, failed share,
 * seconds without a live worker, attempts stuck past their expected time) for every alert in force — the same alerts `GET /ops/queues`
 * reports, from the same thresholds — and `job_queue_alert_threshold{kind}`. A queue without an
 * alert has no series: alert on `job_queue_alert` being present.
 */
export function registerAlertMetrics(registry: Registry, read: () => Promise<QueueAlert[]>, options: { cacheMs?: number; log?: Logger } = {}): void {
  const alerts = softReading(registry, 'alerts', read, [], { cacheMs: options.cacheMs ?? 15_000, log: options.log });
  new Gauge({
    name: 'job_queue_alert',
    help: 'Alerts in force per queue (backlog_age, failure_rate, no_live_worker, stuck_attempts): the measured value',
    labelNames: ['queue', 'kind'],
    registers: [registry],
    async collect() {
      const current = await alerts();
      this.reset();
      for (const alert of current) this.set({ queue: alert.queue, kind: alert.kind }, alert.value);
    },
  });
  new Gauge({
    name: 'job_queue_alert_threshold',
    help: 'The configured threshold of each alert kind in force',
    labelNames: ['kind'],
    registers: [registry],
    async collect() {
      const current = await alerts();
      this.reset();
      for (const alert of current) this.set({ kind: alert.kind }, alert.threshold);
    },
  });
}
