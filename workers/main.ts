// The `worker` process: runs jobs. Scale by running more of them; they share only Postgres.
import { loadConfigOrExit } from '../src/config/load.ts';
import type { Config } from '../src/config/schema.ts';
import { createDb } from '../src/db/knex.ts';
import { createBoss } from '../src/jobs/boss.ts';
import { JobQueue } from '../src/jobs/enqueue.ts';
import { allJobs } from '../src/jobs/queues.ts';
import { maintenanceSchedules } from '../src/platform/maintenance/jobs.ts';
import { billingSchedules } from '../src/billing/jobs.ts';
import { creditSchedules } from '../src/credits/jobs.ts';
import { resolveDatabase } from '../src/platform/database-url.ts';
import { createLogger, type Logger } from '../src/platform/logger.ts';
import { createProviders } from '../src/platform/providers.ts';
import { onShutdown } from '../src/platform/shutdown.ts';
import { handlers } from './handlers/index.ts';

export interface WorkerProcess {
  stop(): Promise<void>;
}

/** Subscribes a handler to every queue; `stop()` takes no new jobs and waits for active ones. */
export async function startWorker(config: Config, databaseUrl: string, log: Logger): Promise<WorkerProcess> {
  const missing = allJobs.filter((job) => !handlers.some((handler) => handler.job.name === job.name));
  if (missing.length) throw new Error(`no worker handler for job ${missing.map((job) => job.name).join(', ')}`);

  const db = createDb(databaseUrl, { max: config.WORKER_CONCURRENCY * handlers.length + 2, applicationName: 'workspace-worker' });
  const boss = createBoss(databaseUrl, 'worker', {
    superviseIntervalSeconds: config.WORKER_SUPERVISE_INTERVAL_SECONDS,
    // Expiry of a dead worker's job is found by the monitor pass (default every 60 s): same cadence.
    monitorIntervalSeconds: config.WORKER_SUPERVISE_INTERVAL_SECONDS,
  });
  boss.on('error', (error) => log.error({ err: error }, 'pg-boss'));
  boss.on('warning', (warning) => log.warn({ warning }, 'pg-boss warning'));
  await boss.start();
  const deps = { config, db, jobs: new JobQueue(boss), log, providers: createProviders(config, db) };

  for (const handler of handlers) {
    await boss.work(handler.job.name, {
      batchSize: 1,
      localConcurrency: config.WORKER_CONCURRENCY,
      // New jobs wake workers through NOTIFY; retries and startAfter jobs are only found by polling
      // (pg-boss's NOTIFY backstop defaults to 30 s), and a known backlog is fetched without pause.
      pollingIntervalSeconds: Math.min(2, config.WORKER_POLL_INTERVAL_SECONDS),
      notifyPollingIntervalSeconds: config.WORKER_POLL_INTERVAL_SECONDS,
      burstWhenReadyExceeds: 1,
    }, async ([job]) => {
      if (!job) return;
      const jobLog = log.child({ job_id: job.id, queue: job.name, attempt: job.retryCount });
      // Re-validate: the payload crossed a process boundary and may predate a deploy.
      const payload = handler.job.payload.parse(job.data);
      const started = Date.now();
      await handler.run(payload, { deps, job, log: jobLog, signal: job.signal });
      jobLog.info({ ms: Date.now() - started }, 'job done');
    });
  }
  // Upserts: every worker registers the same schedules; pg-boss sends each run once.
  for (const { job, cron } of [...maintenanceSchedules, ...billingSchedules, ...creditSchedules]) await boss.schedule(job.name, cron, {}, { tz: 'UTC' });
  log.info({ queues: handlers.map((handler) => handler.job.name) }, 'worker started');

  return {
    async stop() {
      await boss.stop({ graceful: true, timeout: 30_000, close: true });
      await db.destroy();
    },
  };
}

if (import.meta.main) {
  const config = loadConfigOrExit();
  const log = createLogger(config, 'worker');
  const { url, embedded } = await resolveDatabase(config, log);
  const worker = await startWorker(config, url, log);
  onShutdown(log, async () => {
    await worker.stop();
    await embedded?.stop();
  });
}
