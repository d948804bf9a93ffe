// The `worker` process: runs jobs. Scale by running more of them; they share only Postgres.
// Everything it works comes from one list (src/app/jobs.ts): queues, handlers and cron schedules.
import { randomUUID } from 'node:crypto';
import type { PgBoss } from 'pg-boss';
import { loadConfigOrExit } from '../src/config/load.ts';
import type { Config } from '../src/config/schema.ts';
import { fairShareOf } from '../src/jobs/fairness.ts';
import { connectionBudget } from '../src/db/budget.ts';
import { createDb } from '../src/db/knex.ts';
import { notificationHub, closeNotifications } from '../src/db/notifications.ts';
import { allJobs } from '../src/app/jobs.ts';
import { AttemptLog } from '../src/jobs/attempts.ts';
import { handBack, offerAgain } from '../src/jobs/hand-back.ts';
import { createBoss } from '../src/jobs/boss.ts';
import { knexBossDb } from '../src/jobs/boss-db.ts';
import { setTransactionGuard } from '../src/db/transaction-guard.ts';
import { prepareHotStatements, recordClaims } from '../src/jobs/boss-sql/index.ts';
import { localConcurrencyOf, type RunnableJob } from '../src/jobs/define.ts';
import { PauseGate } from '../src/jobs/pauses.ts';
import { JobRuntime, type AttemptObserver } from '../src/jobs/runtime.ts';
import { SlotWaker, slotBackstopSeconds } from '../src/jobs/slots.ts';
import { WorkerRegistry } from '../src/jobs/worker-registry.ts';
import type { Deps } from '../src/platform/deps.ts';
import { resolveDatabase } from '../src/platform/database-url.ts';
import { answerUsage } from '../src/platform/cli-usage.ts';
import { createLogger, type Logger } from '../src/platform/logger.ts';
import { onShutdown } from '../src/platform/shutdown.ts';
import { exitOnFailedStart } from '../src/platform/startup.ts';
import { packageVersion } from '../src/platform/version.ts';
import { DatabaseWatch } from './database-watch.ts';
import { createDeps } from '../src/app/deps.ts';
import { startWorkerMetrics } from '../src/metrics/index.ts';
import { currentAlerts } from '../src/operations/index.ts';

export interface WorkerProcess {
  /** This worker's row in job_workers. */
  id: string;
  stop(): Promise<void>;
}

export interface WorkerOptions {
  jobs?: readonly RunnableJob[];
  /** Per-attempt observer instead of the worker's Prometheus metrics (tests). */
  observer?: AttemptObserver;
}

/** Subscribes every job of `jobs` to its handler; `stop()` takes no new jobs and waits for active ones. */
export async function startWorker(config: Config, databaseUrl: string, log: Logger, options: WorkerOptions = {}): Promise<WorkerProcess> {
  const jobs = options.jobs ?? allJobs;
  // Load every handler now: a broken handler module stops worker start instead of failing its jobs.
  await Promise.all(jobs.map((job) => job.handler()));

  const id = randomUUID();
  const workerLog = log.child({ worker_id: id });
  const budget = connectionBudget(config, 'worker');
  setTransactionGuard(config.DB_TRANSACTION_GUARD, (message) => workerLog.warn(message));
  const db = createDb(databaseUrl, {
    max: budget.knex,
    applicationName: 'workspace-worker',
    // A worker frozen inside a transaction is declared lost after this long and its jobs retried
    // elsewhere; its sessions end then too, so the retries do not wait on its row locks.
    idleInTransactionTimeoutMs: config.WORKER_LOST_AFTER_SECONDS * 1000,
  });
  const boss = createBoss(databaseUrl, 'worker', {
    ...(budget.boss ? { max: budget.boss } : { db: knexBossDb(db) }),
    superviseIntervalSeconds: config.WORKER_SUPERVISE_INTERVAL_SECONDS,
    // Stale heartbeats and expired attempts are found by the monitor pass: same cadence.
    monitorIntervalSeconds: config.WORKER_SUPERVISE_INTERVAL_SECONDS,
    // pg-boss would wake every slot of a queue per new job: the slot waker LISTENs instead, waking one.
    useListenNotify: false,
  });
  // Its fetches and settles are planned once per connection (first, so the statement prepared is the one recordClaims sends).
  prepareHotStatements(boss);
  // Each claim marks its jobs as this worker's in the fetch itself: the history misses no attempt, at no extra write on the fetch.
  // What each fetch found tells the slot waker whether work may be left (created below; no fetch runs before then).
  let slots: SlotWaker | undefined;
  recordClaims(
    boss,
    id,
    jobs.map((job) => job.name),
    (fetch) => slots?.fetchSeen(fetch),
    fairShareOf(jobs, config),
  );
  const deps: Deps = createDeps(config, db, boss, workerLog);
  const hub = notificationHub(db, workerLog);
  const metrics = await startWorkerMetrics(config, db, workerLog, { alerts: () => currentAlerts({ db, config }) });
  const attempts = new AttemptLog(db, workerLog);
  const pauses = new PauseGate(db, workerLog);
  const runtime = new JobRuntime({
    deps,
    db,
    boss,
    log: workerLog,
    workerId: id,
    attempts,
    pauses,
    hub,
    definitions: jobs,
    sweepMs: config.WORKER_HEARTBEAT_SECONDS * 1000,
    observer: options.observer ?? metrics.jobs,
  });
  const registry = new WorkerRegistry(
    db,
    boss,
    workerLog,
    {
      id,
      version: packageVersion,
      queues: jobs.map((job) => job.name),
      concurrency: config.WORKER_CONCURRENCY,
      // No per-worker share any more (the fair claim shares the fleet): a cap, when set, is the fleet's.
      organizationConcurrency: null,
    },
    () => runtime.held(),
    { heartbeatMs: config.WORKER_HEARTBEAT_SECONDS * 1000, lostAfterSeconds: config.WORKER_LOST_AFTER_SECONDS },
  );

  const byName = new Map(jobs.map((job) => [job.name, job]));
  slots = new SlotWaker(
    boss,
    db,
    workerLog,
    jobs.map((job) => job.name),
    config.WORKER_POLL_INTERVAL_SECONDS * 1000,
    {
      of: new Map(jobs.map((job) => [job.name, localConcurrencyOf(job, config)])),
      open: (queue: string, count: number): Promise<unknown> => {
        const job = byName.get(queue);
        return job ? openSlots(boss, job, count, runtime, waker, config) : Promise.resolve();
      },
    },
  );
  const waker: SlotWaker = slots;
  const subscribe = () => Promise.all(jobs.map((job) => waker.openFirst(job.name))).then(() => undefined);
  const unsubscribe = () => Promise.all(jobs.map((job) => boss.offWork(job.name, { wait: false }))).then(() => undefined);
  const watch = new DatabaseWatch({
    log: workerLog,
    probe: () => db.raw('SELECT 1'),
    pause: unsubscribe,
    resume: subscribe,
    maxDelayMs: config.WORKER_DB_RETRY_MAX_SECONDS * 1000,
  });
  boss.on('error', (error) => watch.report(error));
  boss.on('warning', (warning) => workerLog.warn({ warning }, 'pg-boss warning'));
  await boss.start();

  await pauses.start(hub);
  await registry.start();
  await subscribe();
  await waker.start(hub);
  runtime.startSweep();
  // Upserts: every worker registers the same schedules; pg-boss sends each run once. A job that lost its cron loses its schedule.
  await Promise.all(jobs.map((job) => (job.cron ? boss.schedule(job.name, job.cron, {}, { tz: 'UTC' }) : boss.unschedule(job.name))));
  workerLog.info({ queues: jobs.map((job) => job.name) }, 'worker started');

  return {
    id,
    async stop() {
      watch.stop();
      pauses.stop();
      waker.stop();
      // Interrupted attempts from here on are handed back or retried, never ended for good.
      await runtime.stop();
      // Resolves once every running attempt has settled; no new job is fetched from here on.
      const drained = Promise.all(jobs.map((job) => boss.offWork(job.name, { wait: true }))).then(() => true);
      let graceOver: NodeJS.Timeout | undefined;
      const finished = await Promise.race([drained, new Promise<false>((resolve) => (graceOver = setTimeout(resolve, config.SHUTDOWN_GRACE_MS, false)))]);
      clearTimeout(graceOver);
      if (!finished) {
        const handedBack = await handBack(db, runtime.held());
        if (handedBack.length) workerLog.info({ jobs: handedBack.map((job) => job.job_id) }, 'handing back the jobs still running after the grace');
        // Aborts the handlers still running; pg-boss's settle of a handed-back attempt finds it no longer active.
        await boss.stop({ graceful: false, close: false });
        await drained;
        await offerAgain(boss, handedBack);
      }
      await boss.stop({ graceful: false, close: true });
      await attempts.flush();
      await registry.stop();
      await metrics.stop();
      await closeNotifications(db);
      await db.destroy();
    },
  };
}

/**
 * Opens `count` more slots of `job`'s queue on this worker (pg-boss workers, one fetch each as they
 * start; the slot waker opens them as work arrives, up to the queue's capacity).
 */
async function openSlots(boss: PgBoss, job: RunnableJob, count: number, runtime: JobRuntime, slots: SlotWaker, config: Config): Promise<void> {
  const capacity = localConcurrencyOf(job, config);
  await boss.work(
    job.name,
    {
      batchSize: 1,
      localConcurrency: count,
      // A queue grouped by its own key (a webhook endpoint) limits each group across the fleet; every
      // other queue's fetch shares it between organizations by weight (src/jobs/fairness.ts, recordClaims above).
      ...(job.work.groupConcurrency !== undefined && { groupConcurrency: job.work.groupConcurrency }),
      // Slots sleep until the slot waker wakes them (a new job, a job fetched or finished while jobs
      // are owed, its poll finding retries and delayed jobs every WORKER_POLL_INTERVAL_SECONDS);
      // pg-boss's own poll of each slot is a backstop, rarer the more slots the queue has, and a
      // known backlog is fetched without pause.
      pollingIntervalSeconds: slotBackstopSeconds(capacity, config.WORKER_POLL_INTERVAL_SECONDS),
      burstWhenReadyExceeds: 1,
    },
    async ([attempt]) => {
      if (!attempt) return undefined;
      try {
        return await runtime.run(job, attempt);
      } finally {
        slots.finished(job.name);
      }
    },
  );
}

// No top-level await: test files import this module, and a module with one cannot be require()d.
async function main(): Promise<void> {
  answerUsage("usage: npm run worker\n  A worker process alone: runs the jobs (the Procfile's `worker`; migrate first with `npm run migrate`).");
  const config = loadConfigOrExit();
  const log = createLogger(config, 'worker');
  const database = resolveDatabase(config, log);
  const worker = database.then(({ url }) => startWorker(config, url, log));
  // Registered before start-up ends: a stop meanwhile waits for it, then stops the worker and, last, the database it started.
  onShutdown(log, async () => {
    await (await worker).stop();
    await (await database).embedded?.stop();
  });
  await worker;
  // `npm start` restarts a worker that dies after this; one that dies before it stops the whole.
  process.send?.({ type: 'ready' });
}

if (import.meta.main) {
  main().catch(exitOnFailedStart);
}
