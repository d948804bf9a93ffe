/**
 * Job throughput through our runtime against raw pg-boss with the same settings, in one run, on one
 * throw-away database (DATABASE_URL's server, else an embedded PostgreSQL; migrated by `release()`:
 * pg-boss schema, queues, job-table tuning and the console's indexes).
 *
 * - ours: a no-op job made with `defineJob` (queue `bench.noop.v1`, created by `ensureQueues`),
 *   enqueued with `JobQueue.enqueueMany` / `enqueue` on a knex transaction, each job for one of
 *   BENCH_ORGANIZATIONS organizations, and run by `startWorker` (workers/main.ts): pause gate,
 *   attempt history (batched), worker registry, per-organization group concurrency, work context,
 *   a `job done` log line per job at the production level `info` (written to /dev/null), and its
 *   slot waker (src/jobs/slots.ts: one idle slot woken per new job announced, a batch's count included;
 *   while jobs are owed or a backlog is found, one more per job fetched and a slot that finished a job
 *   fetching again at once; one poll statement for the queues with ready jobs).
 * - raw: a second queue with the identical policy (`ensureQueues` of a twin definition), jobs sent
 *   with plain `boss.insert` / `boss.send` carrying the same group ids, worked by a plain PgBoss
 *   (createBoss 'worker' with the worker's intervals) with `boss.work` and the work options of
 *   workers/main.ts `subscribeAll` (batchSize 1, localConcurrency WORKER_CONCURRENCY, groupConcurrency
 *   JOB_ORGANIZATION_CONCURRENCY, the polling settings, its slots woken after each job through
 *   pg-boss's `notifyWorker` as ours are) and a no-op handler.
 * Before each measurement pg-boss's cached queue stats say the queue is empty (as after a quiet spell).
 *
 * Measured, raw and ours taking turns round by round (the machine's speed swings, see docs/benchmarks.md):
 *  (a) drain: BENCH_JOBS jobs queued while no worker runs (the enqueue rate is printed too), then
 *      one worker started; jobs/s from the first handler call to the last job completed. Before each
 *      drain the queue's job table is vacuumed and analyzed, after it the drained jobs are deleted.
 *  (b) latency: BENCH_RATE jobs/s offered for BENCH_LATENCY_SECONDS to a running worker, each sent
 *      on its own (ours: `JobQueue.enqueue` in a transaction of its own); send → completed_on p50/p95,
 *      and the p50 of its parts (send → created_on → started_on → completed_on). The job table is
 *      vacuumed and analyzed first. When ours is over 2× raw, the two mixes (our enqueue into a raw
 *      worker, raw sends into our worker) show which side is slow.
 *  (d) the concurrency curve: at each local concurrency of BENCH_CURVE (1,2,4,8,16,32,64) raw and ours
 *      drain BENCH_CURVE_JOBS jobs, then take BENCH_CURVE_RATE jobs/s for BENCH_CURVE_SECONDS: drain
 *      rate, pick-up (created_on → started_on) p50/p95, the rate achieved, and stalls — a drain or an
 *      offered load that falls below 25 % of its earlier rate for 3 s while jobs wait, a pick-up p95 over
 *      BENCH_STALL_SECONDS, or jobs still waiting 30 s after the last send (then the bench gives up on
 *      them). BENCH_CURVE_PACING=1 adds raw pg-boss with its own pacing (no wake-up after a job), which
 *      shows the stall our workers had before they woke their slots.
 * Phases (a)–(b) again after BENCH_FINISHED completed jobs (half per queue, created over the last 7 days)
 * are inserted into pgboss.job and analyzed. Ratios are medians over rounds of ours / raw of the same round.
 * When ours is below 0.8× raw in a phase (BENCH_VARIANTS=auto; `all` always, `none` never), local
 * copies of the worker with one component switched off at a time drain BENCH_VARIANT_JOBS jobs each,
 * in BENCH_VARIANT_ROUNDS rounds interleaved with raw, to show what each component costs.
 *
 * Env (or argv `--jobs=5000` for BENCH_JOBS etc.): BENCH_JOBS (5000), BENCH_FINISHED (0), BENCH_ROUNDS (3),
 * BENCH_ORGANIZATIONS (20), BENCH_RATE (200; 0 skips latency), BENCH_LATENCY_SECONDS (5), BENCH_CURVE
 * (1,2,4,8,16,32,64; `none` skips it), BENCH_CURVE_JOBS (2000), BENCH_CURVE_RATE (300), BENCH_CURVE_SECONDS (4),
 * BENCH_CURVE_PACING (0), BENCH_STALL_SECONDS (5), BENCH_VARIANTS (auto), BENCH_VARIANT_JOBS (BENCH_JOBS / 4),
 * BENCH_VARIANT_ROUNDS (1), BENCH_LOG_LEVEL (the worker's level, `info`).
 * Run: npm run bench:job-throughput                                     (~6 min)
 *      npm run bench:job-throughput -- --finished=1000000               (+ the phases on a 1M-row job table, ~10 min)
 *      npm run bench:job-throughput -- --curve=1,64 --curve-pacing=1    (with pg-boss's own pacing)
 */
import { randomUUID } from 'node:crypto';
import { loadavg } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import type { PgBoss, WorkOptions } from 'pg-boss';
import { pino } from 'pino';
import { z } from 'zod';
import { createDb } from '../src/db/knex.ts';
import { closeNotifications, notificationHub } from '../src/db/notifications.ts';
import { createDeps } from '../src/app/deps.ts';
import { prepareHotStatements, recordClaims } from '../src/jobs/boss-sql/index.ts';
import { AttemptLog } from '../src/jobs/attempts.ts';
import { createBoss, ensureQueues } from '../src/jobs/boss.ts';
import { bindJob, defineJob, type RunnableJob, runJob } from '../src/jobs/define.ts';
import { JobQueue } from '../src/jobs/enqueue.ts';
import { PauseGate } from '../src/jobs/pauses.ts';
import { JobRuntime } from '../src/jobs/runtime.ts';
import { WorkerRegistry } from '../src/jobs/worker-registry.ts';
import { createLogger, type Logger } from '../src/platform/logger.ts';
import { packageVersion } from '../src/platform/version.ts';
import { testConfig } from '../test/support/config.ts';
import { createTestDatabase } from '../test/support/database.ts';
import { startWorker } from '../workers/main.ts';
import { organizationLimit } from '../src/jobs/fairness.ts';
import { readFlags } from './support/bench.ts';

// argv `--jobs=5000` → BENCH_JOBS=5000; `--help` prints the comment above.
readFlags();
const int = (name: string, fallback: number) => {
  const value = Number(process.env[name] ?? fallback);
  if (!Number.isFinite(value) || value < 0) throw new Error(`${name} must be a number ≥ 0`);
  return Math.floor(value);
};
const JOBS = Math.max(1, int('BENCH_JOBS', 5000));
const FINISHED = int('BENCH_FINISHED', 0);
const ROUNDS = Math.max(1, int('BENCH_ROUNDS', 3));
const ORGANIZATIONS = Math.max(1, int('BENCH_ORGANIZATIONS', 20));
const RATE = int('BENCH_RATE', 200);
const LATENCY_SECONDS = Math.max(1, int('BENCH_LATENCY_SECONDS', 5));
const VARIANTS = (process.env.BENCH_VARIANTS ?? 'auto') as 'auto' | 'all' | 'none';
const VARIANT_JOBS = Math.max(1, int('BENCH_VARIANT_JOBS', Math.ceil(JOBS / 4)));
const VARIANT_ROUNDS = Math.max(1, int('BENCH_VARIANT_ROUNDS', 1));
const WORKER_LOG_LEVEL = (process.env.BENCH_LOG_LEVEL ?? 'info') as 'info';
const CURVE = (process.env.BENCH_CURVE ?? '1,2,4,8,16,32,64')
  .split(',')
  .filter((c) => c.trim() !== '' && c !== 'none')
  .map((c) => {
    const value = Number(c);
    if (!Number.isInteger(value) || value < 1 || value > 64) throw new Error('BENCH_CURVE: concurrencies from 1 to 64, comma-separated');
    return value;
  });
const CURVE_JOBS = Math.max(1, int('BENCH_CURVE_JOBS', 2000));
const CURVE_RATE = Math.max(1, int('BENCH_CURVE_RATE', 300));
const CURVE_SECONDS = Math.max(1, int('BENCH_CURVE_SECONDS', 4));
/** The curve's raw pg-boss with its own pacing too (no wake-up after a job): shows the stall ours had. */
const CURVE_PACING = process.env.BENCH_CURVE_PACING === '1';
/** A pick-up p95 above this many seconds is a stall. */
const STALL_SECONDS = Math.max(1, int('BENCH_STALL_SECONDS', 5));
/** A stall: STALL_WINDOWS seconds in a row below STALL_FRACTION of the rate before, work waiting. */
const STALL_WINDOWS = 3;
const STALL_FRACTION = 0.25;
/** The curve waits this long after the last send before it gives up on a stalled worker. */
const CURVE_GIVE_UP_MS = 30_000;
const GOAL = 0.9;
/** BENCH_VARIANTS=auto measures each component when ours is below this. */
const VARIANTS_BELOW = 0.8;
const FILL_CHUNK = 1000;
if (!['auto', 'all', 'none'].includes(VARIANTS)) throw new Error('BENCH_VARIANTS must be auto, all or none');

// The production worker settings (WORKER_CONCURRENCY 4, JOB_ORGANIZATION_CONCURRENCY 8, polling 2 s, supervision every 30 s).
const config = testConfig({ NODE_ENV: 'production', LOG_LEVEL: 'warn', WORKER_SUPERVISE_INTERVAL_SECONDS: '30' });
const log = createLogger(config, 'bench');
/** A worker's logger as in production (level `info`: a `job done` line per job), written to /dev/null. */
const workerLogger = (level: 'info' | 'warn' = WORKER_LOG_LEVEL) =>
  createLogger({ LOG_LEVEL: level }, 'worker', pino.destination({ dest: '/dev/null', sync: true }));

// ---------------------------------------------------------------------------------------------------------------------
// The two queues, the handlers' counter

const payload = z.object({ n: z.number().int(), sent_at: z.number().optional() });
const progress = { count: 0, firstAt: 0, target: Number.POSITIVE_INFINITY, reached: () => {} };
const tick = () => {
  if (progress.count++ === 0) progress.firstAt = performance.now();
  if (progress.count === progress.target) progress.reached();
};
const noopJob = bindJob(defineJob({ name: 'bench.noop', version: 1, nature: 'computes', payload }), { handler: async () => async () => tick() });
/** Only its queue is used (same policy as ours); raw jobs are sent and worked with plain pg-boss calls. */
const rawTwin = defineJob({ name: 'bench.raw-noop', version: 1, nature: 'computes', payload });

const organizations = Array.from({ length: ORGANIZATIONS }, () => randomUUID());
const organizationOf = (n: number) => organizations[n % ORGANIZATIONS]!;

// ---------------------------------------------------------------------------------------------------------------------
// Workers

interface Running {
  stop(): Promise<void>;
}

type Kind = 'raw' | 'ours';

const workOptions = (groupConcurrency: boolean, concurrency = config.WORKER_CONCURRENCY): WorkOptions => ({
  batchSize: 1,
  localConcurrency: concurrency,
  ...(groupConcurrency && config.JOB_ORGANIZATION_CONCURRENCY !== undefined && { groupConcurrency: config.JOB_ORGANIZATION_CONCURRENCY }),
  pollingIntervalSeconds: Math.min(2, config.WORKER_POLL_INTERVAL_SECONDS),
  notifyPollingIntervalSeconds: config.WORKER_POLL_INTERVAL_SECONDS,
  burstWhenReadyExceeds: 1,
});
const workerBoss = (url: string) =>
  createBoss(url, 'worker', {
    superviseIntervalSeconds: config.WORKER_SUPERVISE_INTERVAL_SECONDS,
    monitorIntervalSeconds: config.WORKER_SUPERVISE_INTERVAL_SECONDS,
  });

/** As the slot waker's `finished` (src/jobs/slots.ts): the slots holding a job fetch again at once instead of waiting their poll interval. */
const keepFetching = (boss: PgBoss, queue: string) => {
  for (const slot of boss.getWipData()) if (slot.name === queue && slot.count > 0) boss.notifyWorker(slot.id);
};

/**
 * Raw pg-boss: a plain PgBoss, the work options of workers/main.ts and a no-op handler. `wake`
 * (default): its slots are woken after each job as ours are (src/jobs/slots.ts `finished`); without
 * it, pg-boss's own pacing — a slot waits its poll interval after each job unless a NOTIFY came or
 * its cached queue stats (30–90 s old) show a backlog.
 */
async function startRaw(url: string, options: { groupConcurrency?: boolean; concurrency?: number; wake?: boolean } = {}): Promise<Running> {
  const boss = workerBoss(url);
  boss.on('error', (error) => log.warn({ err: error }, 'raw pg-boss error'));
  await boss.start();
  const wake = options.wake !== false;
  await boss.work(rawTwin.name, workOptions(options.groupConcurrency !== false, options.concurrency), async () => {
    tick();
    if (wake) keepFetching(boss, rawTwin.name);
  });
  return { stop: () => boss.stop({ graceful: true, timeout: 30_000, close: true }) };
}

async function startOurs(url: string, concurrency = config.WORKER_CONCURRENCY): Promise<Running> {
  const settings = concurrency === config.WORKER_CONCURRENCY ? config : { ...config, WORKER_CONCURRENCY: concurrency };
  return startWorker(settings, url, workerLogger(), { jobs: [noopJob] });
}

/** What a local copy of startWorker switches off, one component at a time. */
interface Variant {
  label: string;
  pauses?: false;
  attempts?: false;
  /** false: pg-boss's fetches and settles sent unnamed (planned each time), as raw pg-boss sends them. */
  prepared?: false;
  registry?: false;
  groupConcurrency?: false;
  /** false: pg-boss calls runJob directly (payload validation + handler): no gate, history, work context, cancel subscription, log line. */
  runtime?: false;
  logLevel?: 'warn';
  raw?: true;
  /** false: the slots are not woken after a job (pg-boss's own pacing). */
  wake?: false;
}

class NoPauses extends PauseGate {
  override async start(): Promise<void> {}
  override covering(): null {
    return null;
  }
}
class NoHistory extends AttemptLog {
  override started(): Promise<void> {
    return Promise.resolve();
  }
  override record(): void {}
}

/**
 * workers/main.ts `startWorker` for one job, copied with switches (no database watch: it only acts
 * on errors), but waking its slots as the worker did before the slot waker: pg-boss's NOTIFY wakes
 * every slot, and the slots holding a job are woken after each job.
 */
async function startVariant(url: string, variant: Variant): Promise<Running> {
  if (variant.raw) return startRaw(url, { groupConcurrency: variant.groupConcurrency !== false, wake: variant.wake !== false });
  const job: RunnableJob = noopJob;
  await job.handler();
  const id = randomUUID();
  const workerLog: Logger = workerLogger(variant.logLevel).child({ worker_id: id });
  const db = createDb(url, { max: config.WORKER_CONCURRENCY + 4, applicationName: 'workspace-worker' });
  const boss = workerBoss(url);
  // As startWorker: fetches and settles prepared; each claim marks its jobs as this worker's in the fetch (no history: plain fetches).
  if (variant.prepared !== false) prepareHotStatements(boss);
  if (variant.attempts !== false) recordClaims(boss, id, [job.name]);
  const deps = createDeps(config, db, boss, workerLog);
  const hub = notificationHub(db, workerLog);
  const attempts = variant.attempts === false ? new NoHistory(db, workerLog) : new AttemptLog(db, workerLog);
  const pauses = variant.pauses === false ? new NoPauses(db, workerLog) : new PauseGate(db, workerLog);
  const runtime = new JobRuntime({ deps, db, boss, log: workerLog, workerId: id, attempts, pauses, hub, definitions: [job], sweepMs: 5_000 });
  const registry = new WorkerRegistry(
    db,
    boss,
    workerLog,
    { id, version: packageVersion, queues: [job.name], concurrency: config.WORKER_CONCURRENCY },
    () => runtime.held(),
    { heartbeatMs: config.WORKER_HEARTBEAT_SECONDS * 1000, lostAfterSeconds: config.WORKER_LOST_AFTER_SECONDS },
  );
  boss.on('error', (error) => log.warn({ err: error }, 'variant pg-boss error'));
  await boss.start();
  await pauses.start(hub);
  if (variant.registry !== false) await registry.start();
  await boss.work(job.name, workOptions(variant.groupConcurrency !== false), async ([attempt]) => {
    if (!attempt) return undefined;
    try {
      if (variant.runtime === false) return await runJob(job, attempt.data, { deps, job: attempt, log: workerLog, signal: attempt.signal });
      return await runtime.run(job, attempt);
    } finally {
      if (variant.wake !== false) keepFetching(boss, job.name);
    }
  });
  return {
    async stop() {
      pauses.stop();
      await boss.stop({ graceful: true, timeout: 30_000, close: true });
      await attempts.flush();
      if (variant.registry !== false) await registry.stop();
      await closeNotifications(db);
      await db.destroy();
    },
  };
}

const VARIANT_LIST: Variant[] = [
  { label: 'ours, local copy of startWorker (all on)' },
  { label: '− pause gate', pauses: false },
  { label: '− attempt history', attempts: false },
  { label: '− prepared fetches and settles', prepared: false },
  { label: '− worker registry', registry: false },
  { label: '− groupConcurrency', groupConcurrency: false },
  { label: '− info logging (level warn)', logLevel: 'warn' },
  { label: '− runtime (runJob called directly)', runtime: false },
  { label: '− all of the above', pauses: false, attempts: false, registry: false, groupConcurrency: false, logLevel: 'warn', runtime: false },
  { label: 'raw − groupConcurrency', raw: true, groupConcurrency: false },
  { label: "raw − wake (pg-boss's own pacing)", raw: true, wake: false },
];

// ---------------------------------------------------------------------------------------------------------------------
// Measurements

const database = await createTestDatabase();
const url = database.url;
const db = createDb(url, { max: 12 });
const sender = createBoss(url, 'web', { max: 8 });
sender.on('error', (error) => log.warn({ err: error }, 'sender pg-boss error'));
await sender.start();
await ensureQueues(sender, [noopJob, rawTwin]);
const jobQueue = new JobQueue(sender);
const queueOf = (kind: Kind) => (kind === 'raw' ? rawTwin.name : noopJob.name);

const tables = (await db('pgboss.queue').whereIn('name', [noopJob.name, rawTwin.name]).distinct('table_name')).map(
  (row: { table_name: string }) => row.table_name,
);

/** Queues `count` jobs with no worker running, FILL_CHUNK per statement; returns jobs/s. */
async function fill(kind: Kind, count: number): Promise<number> {
  const started = performance.now();
  for (let i = 0; i < count; i += FILL_CHUNK) {
    const ns = Array.from({ length: Math.min(FILL_CHUNK, count - i) }, (_, j) => i + j);
    if (kind === 'ours')
      await db.transaction((trx) =>
        jobQueue.enqueueMany(
          trx,
          noopJob,
          ns.map((n) => ({ payload: { n }, organizationId: organizationOf(n) })),
        ),
      );
    else
      await sender.insert(
        rawTwin.name,
        ns.map((n) => ({ data: { n }, group: { id: organizationOf(n) } })),
      );
  }
  return count / ((performance.now() - started) / 1000);
}

const pending = async (queue: string) =>
  Number((await db.raw(`SELECT count(*) AS n FROM pgboss.job WHERE name = ? AND state < 'completed'`, [queue])).rows[0].n);

/**
 * Resolves when the handlers ran `target` times and no job of the queue is left unfinished; returns
 * that instant — or null when `giveUpMs` passed first (the curve's bounded wait on a stalled worker).
 */
async function finished(queue: string, target: number, giveUpMs = Number.POSITIVE_INFINITY): Promise<number | null> {
  const reached = progress.count < target ? new Promise<void>((resolve) => (progress.reached = resolve)) : Promise.resolve();
  // A stalled worker is reported, then the run given up (a bench must not hang).
  const deadline = performance.now() + giveUpMs;
  let seen = progress.count;
  let stalledSince = performance.now();
  while (!(await Promise.race([reached.then(() => true), sleep(250, false)]))) {
    if (performance.now() > deadline) return null;
    if (progress.count !== seen) [seen, stalledSince] = [progress.count, performance.now()];
    else if (performance.now() - stalledSince > 20_000) {
      const { rows } = await db.raw(`SELECT state, count(*)::int AS n FROM pgboss.job WHERE name = ? AND state < 'completed' GROUP BY state`, [queue]);
      throw new Error(`${queue}: no job handled for 20 s (${progress.count} of ${target}; unfinished: ${JSON.stringify(rows)})`);
    }
  }
  while ((await pending(queue)) > 0) await sleep(5);
  return performance.now();
}

/**
 * Handled jobs counted every 250 ms while a measurement runs. `stall()` finds the first stretch of
 * STALL_WINDOWS one-second windows, work still waiting, whose rate is below STALL_FRACTION of the
 * level before it (the median of the earlier windows with work waiting).
 */
function watchProgress(waiting: () => number) {
  const samples: { t: number; done: number; waiting: number }[] = [];
  const take = () => samples.push({ t: performance.now(), done: progress.count, waiting: waiting() });
  take();
  const timer = setInterval(take, 250);
  return {
    stop() {
      clearInterval(timer);
      take();
    },
    stall(): Stall | null {
      const windows: { at: number; rate: number; waiting: boolean }[] = [];
      for (let i = 4; i < samples.length; i += 4) {
        const [a, b] = [samples[i - 4]!, samples[i]!];
        windows.push({ at: (b.t - samples[0]!.t) / 1000, rate: ((b.done - a.done) * 1000) / (b.t - a.t), waiting: b.waiting > 0 });
      }
      const busy: number[] = [];
      let run = 0;
      for (const [i, w] of windows.entries()) {
        if (!w.waiting) {
          run = 0;
          continue;
        }
        const level = busy.length >= 2 ? median(busy) : Number.NaN;
        if (level > 0 && w.rate < STALL_FRACTION * level) {
          run += 1;
          if (run >= STALL_WINDOWS) {
            const stretch = windows.slice(i - run + 1, i + 1);
            return { at: stretch[0]!.at - 1, seconds: run, rate: median(stretch.map((x) => x.rate)), level, waiting: samples[(i + 1) * 4]?.waiting ?? 0 };
          }
        } else {
          run = 0;
          busy.push(w.rate);
        }
      }
      return null;
    },
  };
}

interface Stall {
  /** Seconds into the measurement. */
  at: number;
  seconds: number;
  rate: number;
  level: number;
  waiting: number;
}
const stallText = (s: Stall) =>
  `from ${s.at.toFixed(0)} s, ${s.seconds}+ s at ${s.rate.toFixed(1)} jobs/s against ${s.level.toFixed(0)} jobs/s before (${s.waiting} jobs waiting)`;

/**
 * Before each measurement pg-boss's cached queue stats say nothing is queued, as after any quiet
 * spell: pg-boss itself would burst only once its monitor (every 30 s) and its cache (every 60 s)
 * saw the backlog; ours and raw keep fetching because each slot is woken after a job
 * (src/jobs/slots.ts `finished`), which is what a drain measures.
 */
const resetQueueStats = (queue: string) => db.raw('UPDATE pgboss.queue SET queued_count = 0, ready_count = 0, monitor_on = now() WHERE name = ?', [queue]);

const vacuum = async () => {
  for (const table of tables) await db.raw('VACUUM ANALYZE ??.??', ['pgboss', table]);
};

interface Drain {
  jobsPerSecond: number;
  enqueuePerSecond: number;
  stall: Stall | null;
}

/** Drains `count` queued jobs with a fresh worker; jobs/s from the first handler call to the last completion. */
async function drain(kind: Kind, count: number, start: (url: string) => Promise<Running>): Promise<Drain> {
  const queue = queueOf(kind);
  const since = new Date();
  const enqueuePerSecond = await fill(kind, count);
  await vacuum();
  await resetQueueStats(queue);
  Object.assign(progress, { count: 0, firstAt: 0, target: count });
  const watch = watchProgress(() => count - progress.count);
  const worker = await start(url);
  const end = (await finished(queue, count))!;
  watch.stop();
  const jobsPerSecond = count / ((end - progress.firstAt) / 1000);
  await worker.stop();
  await db.raw('DELETE FROM pgboss.job WHERE name = ? AND created_on >= ?', [queue, since]);
  return { jobsPerSecond, enqueuePerSecond, stall: watch.stall() };
}

/** Offers `rate` jobs/s for `seconds` to a running worker, each sent on its own; send → completed_on percentiles. */
interface Latency {
  p50: number;
  p95: number;
  achieved: number;
  /** p50 of each part. */
  parts: { enqueue: number; pickup: number; run: number };
  /** created_on → started_on. */
  pickup: { p50: number; p95: number };
  stall: Stall | null;
  /** Jobs not done when the bounded wait gave up (the curve), else 0. */
  left: number;
}

interface LatencyOptions {
  /** Who works the jobs (default: who sends them). */
  work?: Kind;
  concurrency?: number;
  rate?: number;
  seconds?: number;
  /** Raw only: false for pg-boss's own pacing. */
  wake?: boolean;
  /** Give up this long after the last send (the rest counted as left). */
  giveUpMs?: number;
}

/** `send`: who enqueues (ours: `JobQueue.enqueue` in a transaction; raw: `boss.send`); the worker works its own queue. */
async function latency(send: Kind, options: LatencyOptions = {}): Promise<Latency> {
  const { work = send, concurrency = config.WORKER_CONCURRENCY, rate = RATE, seconds = LATENCY_SECONDS } = options;
  const job = work === 'raw' ? rawTwin : noopJob;
  const queue = job.name;
  // As before a drain: planner statistics taken now (no queued job), not at the last drain's backlog, whose
  // deleted rows would otherwise still be in the indexes the fetch reads.
  await vacuum();
  await resetQueueStats(queue);
  const worker = await (work === 'raw' ? startRaw(url, { concurrency, wake: options.wake !== false }) : startOurs(url, concurrency));
  await sleep(1000); // the first fetch comes back empty: the queue is idle, the worker waits on NOTIFY
  const since = new Date();
  const total = rate * seconds;
  Object.assign(progress, { count: 0, firstAt: 0, target: total });
  const sends: Promise<unknown>[] = [];
  const sendOne = (n: number) => {
    const data = { n, sent_at: Date.now() };
    return send === 'ours'
      ? db.transaction((trx) => jobQueue.enqueue(trx, job, data, { organizationId: organizationOf(n) }))
      : sender.send(queue, data, { group: { id: organizationOf(n) } });
  };
  let sent = 0;
  const watch = watchProgress(() => sent - progress.count);
  const started = performance.now();
  while (sent < total) {
    const due = Math.min(total, Math.floor(((performance.now() - started) * rate) / 1000) + 1);
    while (sent < due) sends.push(sendOne(sent++));
    await sleep(1);
  }
  await Promise.all(sends);
  const end = await finished(queue, total, options.giveUpMs);
  watch.stop();
  const left = end === null ? total - progress.count : 0;
  await worker.stop();
  // Whole (send → completed_on) and its parts: send → created_on (enqueue), → started_on (pick-up), → completed_on (run + complete).
  // Jobs left by a give-up count with the instant the worker stopped as their start and end.
  const { rows } = await db.raw(
    `WITH t AS (
       SELECT extract(epoch FROM created_on) * 1000 AS created, extract(epoch FROM coalesce(started_on, now())) * 1000 AS started,
              extract(epoch FROM coalesce(completed_on, now())) * 1000 AS completed, (data->>'sent_at')::float8 AS sent
         FROM pgboss.job WHERE name = ? AND created_on >= ?)
     SELECT percentile_cont(ARRAY[0.5, 0.95]) WITHIN GROUP (ORDER BY completed - sent) AS p,
            percentile_cont(0.5) WITHIN GROUP (ORDER BY created - sent) AS enqueue,
            percentile_cont(ARRAY[0.5, 0.95]) WITHIN GROUP (ORDER BY started - created) AS pickup,
            percentile_cont(0.5) WITHIN GROUP (ORDER BY completed - started) AS run
       FROM t`,
    [queue, since],
  );
  await db.raw('DELETE FROM pgboss.job WHERE name = ? AND created_on >= ?', [queue, since]);
  const [p50, p95] = rows[0].p as number[];
  const [pickup50, pickup95] = rows[0].pickup as number[];
  const { enqueue, run } = rows[0] as { enqueue: number; run: number };
  return {
    p50: p50!,
    p95: p95!,
    achieved: progress.count / (((end ?? performance.now()) - started) / 1000),
    parts: { enqueue, pickup: pickup50!, run },
    pickup: { p50: pickup50!, p95: pickup95! },
    stall: watch.stall(),
    left,
  };
}

/** BENCH_FINISHED completed jobs, half per queue, created over the last 7 days, kept for another 7; then ANALYZE. */
async function insertFinished(count: number): Promise<number> {
  const started = performance.now();
  const perStatement = 250_000;
  for (let from = 0; from < count; from += perStatement) {
    await db.raw(
      `INSERT INTO pgboss.job (id, name, data, state, group_id, priority, retry_limit, retry_count, retry_delay, retry_backoff, retry_delay_max,
                               expire_seconds, deletion_seconds, policy, dead_letter, heartbeat_seconds,
                               start_after, created_on, started_on, completed_on, heartbeat_on, keep_until)
       SELECT gen_random_uuid(), q.name, jsonb_build_object('n', s.g, 'id', gen_random_uuid()), 'completed', (?::text[])[1 + s.g % ?], 0,
              q.retry_limit, 0, q.retry_delay, q.retry_backoff, q.retry_delay_max, q.expire_seconds, q.deletion_seconds, q.policy,
              q.dead_letter, q.heartbeat_seconds, s.created, s.created, s.created + interval '20 ms', s.created + interval '25 ms',
              s.created + interval '20 ms', s.created + interval '25 ms' + q.deletion_seconds * interval '1 second'
         FROM (SELECT g, now() - random() * interval '7 days' AS created FROM generate_series(?::int, ?::int) g) s
         JOIN pgboss.queue q ON q.name = CASE WHEN s.g % 2 = 0 THEN ? ELSE ? END`,
      [`{${organizations.join(',')}}`, ORGANIZATIONS, from, Math.min(count, from + perStatement) - 1, noopJob.name, rawTwin.name],
    );
  }
  await db.raw('ANALYZE pgboss.job');
  for (const table of tables) await db.raw('ANALYZE ??.??', ['pgboss', table]);
  return (performance.now() - started) / 1000;
}

// ---------------------------------------------------------------------------------------------------------------------
// Rounds and report

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};
const rate = (value: number) => `${Math.round(value).toLocaleString('en-US').padStart(6)} jobs/s`;
const ms = (value: number) => `${value.toFixed(1).padStart(6)} ms`;
const times = (value: number) => `${value.toFixed(2)}×`;
const load = () => loadavg()[0]!.toFixed(2);

interface PhaseResult {
  label: string;
  raw: number;
  ours: number;
  ratio: number;
  ratios: number[];
  enqueue: { raw: number; ours: number };
  latency?: { raw: { p50: number; p95: number }; ours: { p50: number; p95: number }; ratio50: number; mixed?: { enqueueSide: number; workerSide: number } };
  variants?: { label: string; jobsPerSecond: number; ratio: number }[];
}

async function phase(label: string): Promise<PhaseResult> {
  console.log(`\n${label} (load ${load()})`);
  console.log(`  (a) drain ${JOBS.toLocaleString('en-US')} queued jobs, ${ORGANIZATIONS} organizations, one worker × ${config.WORKER_CONCURRENCY}`);
  const raws: number[] = [];
  const ours: number[] = [];
  const ratios: number[] = [];
  const enqueue = { raw: [] as number[], ours: [] as number[] };
  for (let round = 1; round <= ROUNDS; round++) {
    const raw = await drain('raw', JOBS, (u) => startRaw(u));
    const our = await drain('ours', JOBS, startOurs);
    raws.push(raw.jobsPerSecond);
    ours.push(our.jobsPerSecond);
    ratios.push(our.jobsPerSecond / raw.jobsPerSecond);
    enqueue.raw.push(raw.enqueuePerSecond);
    enqueue.ours.push(our.enqueuePerSecond);
    console.log(
      `    round ${round}: raw ${rate(raw.jobsPerSecond)}   ours ${rate(our.jobsPerSecond)}   ${times(ratios.at(-1)!)}   ` +
        `(enqueue: raw ${rate(raw.enqueuePerSecond)}, ours ${rate(our.enqueuePerSecond)}; load ${load()})`,
    );
    for (const [who, d] of [
      ['raw', raw],
      ['ours', our],
    ] as const)
      if (d.stall) console.log(`      STALL (${who}): ${stallText(d.stall)}`);
  }
  const result: PhaseResult = {
    label,
    raw: median(raws),
    ours: median(ours),
    ratio: median(ratios),
    ratios,
    enqueue: { raw: median(enqueue.raw), ours: median(enqueue.ours) },
  };
  console.log(
    `    median: raw ${rate(result.raw)}   ours ${rate(result.ours)}   ${times(result.ratio)} (rounds ${times(Math.min(...ratios))}–${times(Math.max(...ratios))}; goal ≥ ${GOAL}×)`,
  );

  if (RATE > 0) {
    console.log(`  (b) latency send → completed, ${RATE} jobs/s offered for ${LATENCY_SECONDS} s, each job sent on its own`);
    const samples = { raw: [] as { p50: number; p95: number }[], ours: [] as { p50: number; p95: number }[] };
    for (let round = 1; round <= ROUNDS; round++) {
      const raw = await latency('raw');
      const our = await latency('ours');
      samples.raw.push(raw);
      samples.ours.push(our);
      const parts = (l: Latency) => `${l.parts.enqueue.toFixed(1)} + ${l.parts.pickup.toFixed(1)} + ${l.parts.run.toFixed(1)}`;
      console.log(
        `    round ${round}: raw p50 ${ms(raw.p50)} p95 ${ms(raw.p95)} (${rate(raw.achieved)})   ours p50 ${ms(our.p50)} p95 ${ms(our.p95)} (${rate(our.achieved)})` +
          `   p50 parts enqueue + pick-up + run: raw ${parts(raw)}, ours ${parts(our)}; load ${load()}`,
      );
      for (const [who, l] of [
        ['raw', raw],
        ['ours', our],
      ] as const) {
        if (l.stall) console.log(`      STALL (${who}): ${stallText(l.stall)}`);
        if (l.pickup.p95 > STALL_SECONDS * 1000) console.log(`      STALL (${who}): pick-up p95 ${(l.pickup.p95 / 1000).toFixed(1)} s > ${STALL_SECONDS} s`);
      }
    }
    const pick = (list: { p50: number; p95: number }[]) => ({ p50: median(list.map((s) => s.p50)), p95: median(list.map((s) => s.p95)) });
    result.latency = {
      raw: pick(samples.raw),
      ours: pick(samples.ours),
      ratio50: median(samples.ours.map((s, i) => s.p50 / samples.raw[i]!.p50)),
    };
    console.log(
      `    median: raw p50 ${ms(result.latency.raw.p50)} p95 ${ms(result.latency.raw.p95)}   ours p50 ${ms(result.latency.ours.p50)} p95 ${ms(result.latency.ours.p95)}   (ours/raw p50 ${times(result.latency.ratio50)})`,
    );
    if (result.latency.ratio50 > 2) {
      // Which side is slow: our enqueue into a raw worker, raw sends into our worker.
      const enqueueSide = await latency('ours', { work: 'raw' });
      const workerSide = await latency('raw', { work: 'ours' });
      const line = (l: Latency) =>
        `p50 ${ms(l.p50)} p95 ${ms(l.p95)} (${rate(l.achieved)}; parts ${l.parts.enqueue.toFixed(1)} + ${l.parts.pickup.toFixed(1)} + ${l.parts.run.toFixed(1)})`;
      console.log(`    mixed: ours enqueue → raw worker ${line(enqueueSide)}`);
      console.log(`           raw send → ours worker    ${line(workerSide)}`);
      result.latency.mixed = { enqueueSide: enqueueSide.p50, workerSide: workerSide.p50 };
    }
  }

  if (VARIANTS === 'all' || (VARIANTS === 'auto' && result.ratio < VARIANTS_BELOW)) {
    console.log(`  (c) what each component costs: drain ${VARIANT_JOBS.toLocaleString('en-US')} jobs, ${VARIANT_ROUNDS} rounds, each vs raw of its round`);
    const perVariant = new Map<string, { rates: number[]; ratios: number[] }>(VARIANT_LIST.map((v) => [v.label, { rates: [], ratios: [] }]));
    const rawRates: number[] = [];
    for (let round = 1; round <= VARIANT_ROUNDS; round++) {
      const raw = (await drain('raw', VARIANT_JOBS, (u) => startRaw(u))).jobsPerSecond;
      rawRates.push(raw);
      const line: string[] = [`raw ${Math.round(raw)}`];
      for (const variant of VARIANT_LIST) {
        const value = (await drain(variant.raw ? 'raw' : 'ours', VARIANT_JOBS, (u) => startVariant(u, variant))).jobsPerSecond;
        perVariant.get(variant.label)!.rates.push(value);
        perVariant.get(variant.label)!.ratios.push(value / raw);
        line.push(Math.round(value).toString());
      }
      console.log(`    round ${round} (load ${load()}): ${line.join(' / ')}`);
    }
    console.log(`    ${'raw (this section)'.padEnd(44)} ${rate(median(rawRates))}`);
    result.variants = VARIANT_LIST.map((variant) => {
      const { rates, ratios: rs } = perVariant.get(variant.label)!;
      const entry = { label: variant.label, jobsPerSecond: median(rates), ratio: median(rs) };
      console.log(`    ${variant.label.padEnd(44)} ${rate(entry.jobsPerSecond)}   ${times(entry.ratio)} raw`);
      return entry;
    });
  }
  return result;
}

interface CurvePoint {
  concurrency: number;
  drain: { raw: number; ours: number };
  pickup: { raw: Latency; ours: Latency; paced?: Latency };
  stalls: string[];
}

/**
 * The concurrency curve: at each WORKER_CONCURRENCY (local concurrency) of one worker, raw and ours
 * each drain CURVE_JOBS queued jobs, then take CURVE_RATE jobs/s sent one by one for CURVE_SECONDS;
 * drain rate, pick-up (created → started) p50/p95 and the rate achieved, and any stall: a drain or
 * an offered load that fell below a quarter of its rate for 3 s with work waiting, or a pick-up p95
 * over STALL_SECONDS, or jobs still waiting 30 s after the last send.
 */
async function curve(): Promise<CurvePoint[]> {
  console.log(
    `\n(d) concurrency curve, one worker, ${ORGANIZATIONS} organizations: drain ${CURVE_JOBS.toLocaleString('en-US')} queued jobs; then ${CURVE_RATE} jobs/s offered for ${CURVE_SECONDS} s (load ${load()})`,
  );
  console.log(
    `    ${'conc'.padStart(4)}  ${'drain raw'.padStart(14)} ${'ours'.padStart(14)} ${'ratio'.padStart(6)}   pick-up p50 / p95: ${'raw'.padEnd(22)} ${'ours'.padEnd(22)}${CURVE_PACING ? ` ${"raw, pg-boss's pacing".padEnd(30)}` : ''} achieved raw / ours`,
  );
  const points: CurvePoint[] = [];
  for (const concurrency of CURVE) {
    const rawDrain = await drain('raw', CURVE_JOBS, (u) => startRaw(u, { concurrency }));
    const ourDrain = await drain('ours', CURVE_JOBS, (u) => startOurs(u, concurrency));
    const offered = { concurrency, rate: CURVE_RATE, seconds: CURVE_SECONDS, giveUpMs: CURVE_GIVE_UP_MS };
    const raw = await latency('raw', offered);
    const ours = await latency('ours', offered);
    const paced = CURVE_PACING ? await latency('raw', { ...offered, wake: false }) : undefined;
    const stalls: string[] = [];
    const check = (who: string, l: Latency | undefined) => {
      if (!l) return;
      if (l.stall) stalls.push(`${who} offered: ${stallText(l.stall)}`);
      if (l.pickup.p95 > STALL_SECONDS * 1000) stalls.push(`${who}: pick-up p95 ${(l.pickup.p95 / 1000).toFixed(1)} s > ${STALL_SECONDS} s`);
      if (l.left) stalls.push(`${who}: ${l.left} jobs still waiting ${CURVE_GIVE_UP_MS / 1000} s after the last send (given up)`);
    };
    if (rawDrain.stall) stalls.push(`raw drain: ${stallText(rawDrain.stall)}`);
    if (ourDrain.stall) stalls.push(`ours drain: ${stallText(ourDrain.stall)}`);
    check('raw', raw);
    check('ours', ours);
    check("raw (pg-boss's pacing)", paced);
    const pick = (l: Latency) => `${ms(l.pickup.p50)} / ${ms(l.pickup.p95)}`.padEnd(22);
    console.log(
      `    ${String(concurrency).padStart(4)}  ${rate(rawDrain.jobsPerSecond).padStart(14)} ${rate(ourDrain.jobsPerSecond).padStart(14)} ${times(ourDrain.jobsPerSecond / rawDrain.jobsPerSecond).padStart(6)}` +
        `   ${''.padEnd(19)}${pick(raw)} ${pick(ours)}${paced ? ` ${`${pick(paced)} ${Math.round(paced.achieved)}/s`.padEnd(30)}` : ''} ${Math.round(raw.achieved)} / ${Math.round(ours.achieved)}/s   (load ${load()})`,
    );
    for (const stall of stalls) console.log(`          STALL ${stall}`);
    points.push({ concurrency, drain: { raw: rawDrain.jobsPerSecond, ours: ourDrain.jobsPerSecond }, pickup: { raw, ours, ...(paced && { paced }) }, stalls });
  }
  const ourStalls = points.filter((p) => p.stalls.some((x) => x.startsWith('ours')));
  console.log(`    stalls of ours: ${ourStalls.length ? ourStalls.map((p) => p.concurrency).join(', ') : 'none'}`);
  return points;
}

const loadBefore = load();
const results: PhaseResult[] = [];
let points: CurvePoint[] = [];
try {
  console.log(
    'job throughput: our runtime (startWorker) vs raw pg-boss, ' +
      `no-op handler; WORKER_CONCURRENCY ${config.WORKER_CONCURRENCY}, organization limit ${JSON.stringify(organizationLimit(config))}, ` +
      `worker log level ${WORKER_LOG_LEVEL}; load ${loadBefore}`,
  );
  results.push(await phase('phase 1: job table without finished jobs'));
  if (CURVE.length) points = await curve();
  if (FINISHED > 0) {
    const seconds = await insertFinished(FINISHED);
    console.log(`\ninserted ${FINISHED.toLocaleString('en-US')} finished jobs and analyzed in ${seconds.toFixed(1)} s`);
    results.push(await phase(`phase 2: job table with ${FINISHED.toLocaleString('en-US')} finished jobs`));
  }

  const day = new Date().toISOString().slice(0, 10);
  console.log('\n---- summary (docs/benchmarks.md) ----');
  console.log(
    `${day}, load ≈ ${loadBefore}–${load()}, ${JOBS.toLocaleString('en-US')} jobs, ${ROUNDS} rounds, ${ORGANIZATIONS} organizations, one worker × ${config.WORKER_CONCURRENCY}:`,
  );
  for (const r of results) {
    const parts = [
      `drain raw ${Math.round(r.raw)} vs ours ${Math.round(r.ours)} jobs/s = **${times(r.ratio)}** (rounds ${times(Math.min(...r.ratios))}–${times(Math.max(...r.ratios))})`,
      `enqueue raw ${Math.round(r.enqueue.raw)} vs ours ${Math.round(r.enqueue.ours)} jobs/s`,
    ];
    if (r.latency)
      parts.push(
        `at ${RATE}/s send → completed p50 ${r.latency.raw.p50.toFixed(1)} vs ${r.latency.ours.p50.toFixed(1)} ms, p95 ${r.latency.raw.p95.toFixed(1)} vs ${r.latency.ours.p95.toFixed(1)} ms`,
      );
    if (r.latency?.mixed)
      parts.push(
        `p50 ours enqueue → raw worker ${r.latency.mixed.enqueueSide.toFixed(1)} ms, raw send → ours worker ${r.latency.mixed.workerSide.toFixed(1)} ms`,
      );
    if (r.variants) parts.push(`without: ${r.variants.map((v) => `${v.label.replace(/^− /, '')} ${times(v.ratio)}`).join(', ')}`);
    console.log(`- ${r.label}: ${parts.join('; ')}`);
  }
  if (points.length) {
    const cell = (p: CurvePoint) =>
      `${p.concurrency}: ${Math.round(p.drain.raw)}/${Math.round(p.drain.ours)} (${times(p.drain.ours / p.drain.raw)}), pick-up p95 ${p.pickup.raw.pickup.p95.toFixed(0)}/${p.pickup.ours.pickup.p95.toFixed(0)} ms` +
      (p.pickup.paced ? `, paced ${p.pickup.paced.pickup.p95.toFixed(0)} ms at ${Math.round(p.pickup.paced.achieved)}/s` : '');
    console.log(`- concurrency curve (drain raw/ours jobs/s, pick-up p95 raw/ours at ${CURVE_RATE}/s): ${points.map(cell).join('; ')}`);
    const stalled = points.filter((p) => p.stalls.length);
    console.log(`- stalls: ${stalled.length ? stalled.map((p) => `at ${p.concurrency}: ${p.stalls.join('; ')}`).join(' | ') : 'none'}`);
  }
  console.log(`goal ≥ ${GOAL}× raw: ${results.every((r) => r.ratio >= GOAL) ? 'met' : 'not met'}`);
} finally {
  await sender.stop({ graceful: false, close: true });
  await db.destroy();
  await database.dispose();
}
