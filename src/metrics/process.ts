import type { Knex } from 'knex';
import type { Registry } from 'prom-client';
import type { Config } from '../config/schema.ts';
import type { Logger } from '../platform/logger.ts';
import { portRefusal } from '../platform/startup.ts';
import { type QueueAlert, registerAlertMetrics } from './alerts.ts';
import { registerCreditMetrics } from './credits.ts';
import { JobMetrics } from './jobs.ts';
import { registerPoolMetrics } from './pool.ts';
import { registerQueueMetrics } from './queues.ts';
import { createMetricsRegistry, type ProcessKind } from './registry.ts';
import { type MetricsServer, startMetricsServer } from './server.ts';

type MetricsConfig = Pick<Config, 'HOST' | 'METRICS_TOKEN' | 'METRICS_PORT' | 'WORKER_METRICS_PORT' | 'WORKER_LOST_AFTER_SECONDS'>;

/** A process's registry with the database-backed collectors every process exposes. */
/** Readings the composition root hands in (they belong to domains metrics must not import). */
export interface MetricSources {
  /** The queue alerts in force (src/operations: the same as GET /ops/queues). */
  alerts?: () => Promise<QueueAlert[]>;
}

function processRegistry(kind: ProcessKind, config: MetricsConfig, db: Knex, sources: MetricSources, log: Logger): Registry {
  const registry = createMetricsRegistry(kind);
  registerPoolMetrics(registry, db, kind);
  registerQueueMetrics(registry, db, { log, liveWithinSeconds: config.WORKER_LOST_AFTER_SECONDS });
  if (sources.alerts) registerAlertMetrics(registry, sources.alerts, { log });
  registerCreditMetrics(registry, db, { log });
  return registry;
}

export interface WorkerMetrics {
  registry: Registry;
  /** For the job runtime: call attemptStarted/attemptEnded around every attempt. */
  jobs: JobMetrics;
  /** Where /metrics is served (WORKER_METRICS_PORT set), else undefined. */
  url: string | undefined;
  stop(): Promise<void>;
}

/**
 * The worker's metrics: registry (process label `worker`), pool/queue/credit collectors, the job
 * counters, and — with WORKER_METRICS_PORT — `GET /metrics` on that port (behind METRICS_TOKEN when
 * set). Without the port nothing listens; the counters still count (cheap), for a later exposure.
 */
export async function startWorkerMetrics(config: MetricsConfig, db: Knex, log: Logger, sources: MetricSources = {}): Promise<WorkerMetrics> {
  const registry = processRegistry('worker', config, db, sources, log);
  const jobs = new JobMetrics(registry);
  let server: MetricsServer | undefined;
  if (config.WORKER_METRICS_PORT !== undefined) {
    server = await startMetricsServer({ registry, port: config.WORKER_METRICS_PORT, host: config.HOST, token: config.METRICS_TOKEN, log }).catch(
      refusingPort('WORKER_METRICS_PORT', config.WORKER_METRICS_PORT, config.HOST),
    );
    log.info({ url: `${server.url}/metrics` }, 'worker metrics served');
  }
  return { registry, jobs, url: server?.url, stop: async () => server?.close() };
}

export interface WebMetrics {
  registry: Registry;
  /** Serve `GET /metrics` on the API's own port behind this token (METRICS_TOKEN without METRICS_PORT). */
  appToken: string | undefined;
  /** The separate metrics port's URL (METRICS_PORT), else undefined. */
  url: string | undefined;
  stop(): Promise<void>;
}

/**
 * The web process's metrics, or undefined when they are not exposed (no METRICS_TOKEN, no
 * METRICS_PORT): then nothing is measured and `GET /metrics` is a 404 like any unknown path — an
 * unauthenticated scrape endpoint on the public API port would publish traffic and credit volumes.
 * METRICS_PORT: served there only (the API port keeps answering 404), behind METRICS_TOKEN if set.
 * METRICS_TOKEN alone: served on the API port to `Authorization: Bearer <METRICS_TOKEN>`.
 */
export async function startWebMetrics(config: MetricsConfig, db: Knex, log: Logger, sources: MetricSources = {}): Promise<WebMetrics | undefined> {
  if (config.METRICS_PORT === undefined && config.METRICS_TOKEN === undefined) return undefined;
  const registry = processRegistry('web', config, db, sources, log);
  if (config.METRICS_PORT === undefined) return { registry, appToken: config.METRICS_TOKEN, url: undefined, stop: async () => {} };
  const server = await startMetricsServer({ registry, port: config.METRICS_PORT, host: config.HOST, token: config.METRICS_TOKEN, log }).catch(
    refusingPort('METRICS_PORT', config.METRICS_PORT, config.HOST),
  );
  return { registry, appToken: undefined, url: server.url, stop: () => server.close() };
}

/** A busy metrics port ends the start with one line naming its variable, as a busy PORT does. */
const refusingPort =
  (variable: string, port: number, host: string) =>
  (error: unknown): never => {
    throw portRefusal(error, variable, port, host) ?? error;
  };
