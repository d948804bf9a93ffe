// The `worker` process: runs jobs. Scale by running more of them; they share only Postgres.
// Everything it works comes from one list (src/jobs.ts): queues, handlers and cron schedules.
import type { PgBoss } from 'pg-boss';
import { loadConfigOrExit } from '../src/config/load.ts';
import type { Config } from '../src/config/schema.ts';
import { createDb } from '../src/db/knex.ts';
import { allJobs } from '../src/jobs.ts';
import { createBoss } from '../src/jobs/boss.ts';
import { runJob, type JobDefinition } from '../src/jobs/define.ts';
import type { Deps } from '../src/platform/deps.ts';
import { resolveDatabase } from '../src/platform/database-url.ts';
import { createLogger, type Logger } from '../src/platform/logger.ts';
import { onShutdown } from '../src/platform/shutdown.ts';
import { DatabaseWatch } from './database-watch.ts';
import { createDeps } from '../src/deps.ts';

export interface WorkerProcess {
  stop(): Promise<void>;
}

/** Subscribes every job of `jobs` to its handler; `stop()` takes no new jobs and waits for active ones. */
export async function startWorker(config: Config, databaseUrl: string, log: Logger, jobs: readonly JobDefinition[] = allJobs): Promise<WorkerProcess> {
  // Load every handler now: a broken handler module stops worker start instead of failing its jobs.
  await Promise.all(jobs.map((job) => job.handler()));

  const db = createDb(databaseUrl, { max: config.WORKER_CONCURRENCY * jobs.length + 2, applicationName: 'workspace-worker' });
  const boss = createBoss(databaseUrl, 'worker', {
    superviseIntervalSeconds: config.WORKER_SUPERVISE_INTERVAL_SECONDS,
    // Stale heartbeats and expired attempts are found by the monitor pass: same cadence.
    monitorIntervalSeconds: config.WORKER_SUPERVISE_INTERVAL_SECONDS,
  });
  const deps: Deps = createDeps(config, db, boss, log);
  const subscribe = () => subscribeAll(boss, jobs, deps, config, log);
  const unsubscribe = () => Promise.all(jobs.map((job) => boss.offWork(job.name, { wait: false }))).then(() => undefined);
  const watch = new DatabaseWatch({
    log,
    probe: () => db.raw('SELECT 1'),
    pause: unsubscribe,
    resume: subscribe,
    maxDelayMs: config.WORKER_DB_RETRY_MAX_SECONDS * 1000,
  });
  boss.on('error', (error) => watch.report(error));
  boss.on('warning', (warning) => log.warn({ warning }, 'pg-boss warning'));
  await boss.start();

  await subscribe();
  // Upserts: every worker registers the same schedules; pg-boss sends each run once. A job that lost its cron loses its schedule.
  for (const job of jobs) await (job.cron ? boss.schedule(job.name, job.cron, {}, { tz: 'UTC' }) : boss.unschedule(job.name));
  log.info({ queues: jobs.map((job) => job.name) }, 'worker started');

  return {
    async stop() {
      watch.stop();
      await boss.stop({ graceful: true, timeout: 30_000, close: true });
      await db.destroy();
    },
  };
}

async function subscribeAll(boss: PgBoss, jobs: readonly JobDefinition[], deps: Deps, config: Config, log: Logger): Promise<void> {
  for (const job of jobs) {
    await boss.work(
      job.name,
      {
        batchSize: 1,
        localConcurrency: config.WORKER_CONCURRENCY,
        // New jobs wake workers through NOTIFY; retries and startAfter jobs are only found by polling
        // (pg-boss's NOTIFY backstop defaults to 30 s), and a known backlog is fetched without pause.
        pollingIntervalSeconds: Math.min(2, config.WORKER_POLL_INTERVAL_SECONDS),
        notifyPollingIntervalSeconds: config.WORKER_POLL_INTERVAL_SECONDS,
        burstWhenReadyExceeds: 1,
      },
      async ([attempt]) => {
        if (!attempt) return;
        const jobLog = log.child({ job_id: attempt.id, queue: attempt.name, attempt: attempt.retryCount });
        const started = Date.now();
        try {
          await runJob(job, attempt.data, { deps, job: attempt, log: jobLog, signal: attempt.signal });
        } catch (error) {
          // pg-boss keeps only the last attempt's output: the log keeps each one.
          jobLog.warn({ err: error, ms: Date.now() - started }, 'job attempt failed');
          throw error;
        }
        jobLog.info({ ms: Date.now() - started }, 'job done');
      },
    );
  }
}

// No top-level await: test files import this module, and a module with one cannot be require()d.
async function main(): Promise<void> {
  const config = loadConfigOrExit();
  const log = createLogger(config, 'worker');
  const { url, embedded } = await resolveDatabase(config, log);
  // Registered before the worker starts: a SIGTERM during start-up waits for it, then stops it cleanly.
  const worker = startWorker(config, url, log);
  onShutdown(log, async () => {
    await (await worker).stop();
    await embedded?.stop();
  });
  await worker;
}

if (import.meta.main) {
  main().catch((error: unknown) => {
    console.error(error);
    process.exit(1);
  });
}
