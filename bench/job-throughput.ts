/**
 * Job throughput through our runtime against raw pg-boss with the same settings, in one run, on one
 * throw-away database (DATABASE_URL's server, else an embedded PostgreSQL; migrated by `release()`:
 * pg-boss schema, queues, job-table tuning and the console's indexes).
 *
 * - ours: a no-op job made with `defineJob` (queue `bench.noop.v1`, created by `ensureQueues`),
 *   enqueued with `JobQueue.enqueueMany` / `enqueue` on a knex transaction, each job for one of
 *   BENCH_ORGANIZATIONS organizations, and run by `startWorker` (workers/main.ts): pause gate,
 *   attempt history (batched), worker registry, per-organization group concurrency, work context,
 *   a `job done` log line per job at the production level `info` (written to /dev/null).
 * - raw: a second queue with the identical policy (`ensureQueues` of a twin definition), jobs sent
 *   with plain `boss.insert` / `boss.send` carrying the same group ids, worked by a plain PgBoss
 *   (createBoss 'worker' with the worker's intervals) with `boss.work` and the work options of
 *   workers/main.ts `subscribeAll` (batchSize 1, localConcurrency WORKER_CONCURRENCY, groupConcurrency
 *   JOB_ORGANIZATION_CONCURRENCY, the polling settings) and a no-op handler.
 *
 * Measured, raw and ours taking turns round by round (the machine's speed swings, see README "Benchmarks"):
 *  (a) drain: BENCH_JOBS jobs queued while no worker runs (the enqueue rate is printed too), then
 *      one worker started; jobs/s from the first handler call to the last job completed. Before each
 *      drain the queue's job table is vacuumed and analyzed, after it the drained jobs are deleted.
 *  (b) latency: BENCH_RATE jobs/s offered for BENCH_LATENCY_SECONDS to a running worker, each sent
 *      on its own (ours: `JobQueue.enqueue` in a transaction of its own); send → completed_on p50/p95,
 *      and the p50 of its parts (send → created_on → started_on → completed_on). The job table is
 *      vacuumed and analyzed first. When ours is over 2× raw, the two mixes (our enqueue into a raw
 *      worker, raw sends into our worker) show which side is slow.
 * Both again after BENCH_FINISHED completed jobs (half per queue, created over the last 7 days) are
 * inserted into pgboss.job and analyzed. Ratios are medians over rounds of ours / raw of the same round.
 * When ours is below 0.8× raw in a phase (BENCH_VARIANTS=auto; `all` always, `none` never), local
 * copies of the worker with one component switched off at a time drain BENCH_VARIANT_JOBS jobs each,
 * in BENCH_VARIANT_ROUNDS rounds interleaved with raw, to show what each component costs.
 *
 * Env (or argv `--jobs=5000` for BENCH_JOBS etc.): BENCH_JOBS (20000), BENCH_FINISHED (1000000),
 * BENCH_ROUNDS (3), BENCH_ORGANIZATIONS (20), BENCH_RATE (200; 0 skips latency), BENCH_LATENCY_SECONDS (5),
 * BENCH_VARIANTS (auto), BENCH_VARIANT_JOBS (BENCH_JOBS / 4), BENCH_VARIANT_ROUNDS (1), BENCH_LOG_LEVEL
 * (the worker's level, `info`).
 * Run: npm run bench:job-throughput                                    (~10 min with the variants)
 *      BENCH_JOBS=5000 BENCH_FINISHED=100000 npm run bench:job-throughput   (quick)
 */
import { randomUUID } from 'node:crypto';
import { loadavg } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import type { WorkOptions } from 'pg-boss';
import { pino } from 'pino';
import { z } from 'zod';
import { createDb } from '../src/db/knex.ts';
import { closeNotifications, notificationHub } from '../src/db/notifications.ts';
import { createDeps } from '../src/deps.ts';
import { AttemptLog } from '../src/jobs/attempts.ts';
import { createBoss, ensureQueues } from '../src/jobs/boss.ts';
import { defineJob, runJob, type JobDefinition } from '../src/jobs/define.ts';
import { JobQueue } from '../src/jobs/enqueue.ts';
import { PauseGate } from '../src/jobs/pauses.ts';
import { JobRuntime } from '../src/jobs/runtime.ts';
import { WorkerRegistry } from '../src/jobs/worker-registry.ts';
import { createLogger, type Logger } from '../src/platform/logger.ts';
import { packageVersion } from '../src/platform/version.ts';
import { testConfig } from '../test/support/config.ts';
import { createTestDatabase } from '../test/support/database.ts';
import { startWorker } from '../workers/main.ts';

// argv `--jobs=5000` → BENCH_JOBS=5000.
for (const arg of process.argv.slice(2)) {
  const match = /^--([a-z-]+)=(.*)$/.exec(arg);
  if (match) process.env[`BENCH_${match[1]!.replaceAll('-', '_').toUpperCase()}`] = match[2]!;
}
const int = (name: string, fallback: number) => {
  const value = Number(process.env[name] ?? fallback);
  if (!Number.isFinite(value) || value < 0) throw new Error(`${name} must be a number ≥ 0`);
  return Math.floor(value);
};
const JOBS = Math.max(1, int('BENCH_JOBS', 20_000));
const FINISHED = int('BENCH_FINISHED', 1_000_000);
const ROUNDS = Math.max(1, int('BENCH_ROUNDS', 3));
const ORGANIZATIONS = Math.max(1, int('BENCH_ORGANIZATIONS', 20));
const RATE = int('BENCH_RATE', 200);
const LATENCY_SECONDS = Math.max(1, int('BENCH_LATENCY_SECONDS', 5));
const VARIANTS = (process.env.BENCH_VARIANTS ?? 'auto') as 'auto' | 'all' | 'none';
const VARIANT_JOBS = Math.max(1, int('BENCH_VARIANT_JOBS', Math.ceil(JOBS / 4)));
const VARIANT_ROUNDS = Math.max(1, int('BENCH_VARIANT_ROUNDS', 1));
const WORKER_LOG_LEVEL = (process.env.BENCH_LOG_LEVEL ?? 'info') as 'info';
const GOAL = 0.8;
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
const noopJob = defineJob({ name: 'bench.noop', version: 1, payload, handler: async () => async () => tick() });
/** Only its queue is used (same policy as ours); raw jobs are sent and worked with plain pg-boss calls. */
const rawTwin = defineJob({ name: 'bench.raw-noop', version: 1, payload, handler: async () => async () => undefined });

const organizations = Array.from({ length: ORGANIZATIONS }, () => randomUUID());
const organizationOf = (n: number) => organizations[n % ORGANIZATIONS]!;

// ---------------------------------------------------------------------------------------------------------------------
// Workers

interface Running {
  stop(): Promise<void>;
}

type Kind = 'raw' | 'ours';

const workOptions = (groupConcurrency: boolean): WorkOptions => ({
  batchSize: 1,
  localConcurrency: config.WORKER_CONCURRENCY,
  ...(groupConcurrency && { groupConcurrency: config.JOB_ORGANIZATION_CONCURRENCY }),
  pollingIntervalSeconds: Math.min(2, config.WORKER_POLL_INTERVAL_SECONDS),
  notifyPollingIntervalSeconds: config.WORKER_POLL_INTERVAL_SECONDS,
  burstWhenReadyExceeds: 1,
});
const workerBoss = (url: string) =>
  createBoss(url, 'worker', {
    superviseIntervalSeconds: config.WORKER_SUPERVISE_INTERVAL_SECONDS,
    monitorIntervalSeconds: config.WORKER_SUPERVISE_INTERVAL_SECONDS,
  });

async function startRaw(url: string, groupConcurrency = true): Promise<Running> {
  const boss = workerBoss(url);
  boss.on('error', (error) => log.warn({ err: error }, 'raw pg-boss error'));
  await boss.start();
  await boss.work(rawTwin.name, workOptions(groupConcurrency), async () => tick());
  return { stop: () => boss.stop({ graceful: true, timeout: 30_000, close: true }) };
}

async function startOurs(url: string): Promise<Running> {
  return startWorker(config, url, workerLogger(), { jobs: [noopJob] });
}

/** What a local copy of startWorker switches off, one component at a time. */
interface Variant {
  label: string;
  pauses?: false;
  attempts?: false;
  registry?: false;
  groupConcurrency?: false;
  /** false: pg-boss calls runJob directly (payload validation + handler): no gate, history, work context, cancel subscription, log line. */
  runtime?: false;
  logLevel?: 'warn';
  raw?: true;
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

/** workers/main.ts `startWorker` for one job, copied with switches (no database watch: it only acts on errors). */
async function startVariant(url: string, variant: Variant): Promise<Running> {
  if (variant.raw) return startRaw(url, variant.groupConcurrency !== false);
  const job: JobDefinition = noopJob;
  await job.handler();
  const id = randomUUID();
  const workerLog: Logger = workerLogger(variant.logLevel).child({ worker_id: id });
  const db = createDb(url, { max: config.WORKER_CONCURRENCY + 4, applicationName: 'workspace-worker' });
  const boss = workerBoss(url);
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
    if (variant.runtime === false) return runJob(job, attempt.data, { deps, job: attempt, log: workerLog, signal: attempt.signal });
    return runtime.run(job, attempt);
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
  { label: '− worker registry', registry: false },
  { label: '− groupConcurrency', groupConcurrency: false },
  { label: '− info logging (level warn)', logLevel: 'warn' },
  { label: '− runtime (runJob called directly)', runtime: false },
  { label: '− all of the above', pauses: false, attempts: false, registry: false, groupConcurrency: false, logLevel: 'warn', runtime: false },
  { label: 'raw − groupConcurrency', raw: true, groupConcurrency: false },
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

/** Resolves when the handlers ran `target` times and no job of the queue is left unfinished; returns that instant. */
async function finished(queue: string, target: number): Promise<number> {
  const reached = progress.count < target ? new Promise<void>((resolve) => (progress.reached = resolve)) : Promise.resolve();
  // A stalled worker is reported, then the run given up (a bench must not hang).
  let seen = progress.count;
  let stalledSince = performance.now();
  while (!(await Promise.race([reached.then(() => true), sleep(1000, false)]))) {
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
 * pg-boss bursts (fetches again without pause) only while its cached queue stats show a backlog: the
 * monitor counts the queue every WORKER_SUPERVISE_INTERVAL_SECONDS (30 s) and a worker re-reads those
 * counts every 60 s (and at start). A backlog the cache has not seen yet drains at a fraction of the rate
 * (one fetch per NOTIFY or poll interval), so each worker starts with the counts the monitor would
 * have written by now: the queued jobs before a drain, none before the latency run.
 */
const primeQueueStats = (queue: string, queued: number) =>
  db.raw('UPDATE pgboss.queue SET queued_count = ?, ready_count = ?, monitor_on = now() WHERE name = ?', [queued, queued, queue]);

const vacuum = async () => {
  for (const table of tables) await db.raw('VACUUM ANALYZE ??.??', ['pgboss', table]);
};

/** Drains `count` queued jobs with a fresh worker; jobs/s from the first handler call to the last completion. */
async function drain(kind: Kind, count: number, start: (url: string) => Promise<Running>): Promise<{ jobsPerSecond: number; enqueuePerSecond: number }> {
  const queue = queueOf(kind);
  const since = new Date();
  const enqueuePerSecond = await fill(kind, count);
  await vacuum();
  await primeQueueStats(queue, count);
  Object.assign(progress, { count: 0, firstAt: 0, target: count });
  const worker = await start(url);
  const end = await finished(queue, count);
  const jobsPerSecond = count / ((end - progress.firstAt) / 1000);
  await worker.stop();
  await db.raw('DELETE FROM pgboss.job WHERE name = ? AND created_on >= ?', [queue, since]);
  return { jobsPerSecond, enqueuePerSecond };
}

/** Offers RATE jobs/s for LATENCY_SECONDS to a running worker, each sent on its own; send → completed_on percentiles. */
interface Latency {
  p50: number;
  p95: number;
  achieved: number;
  /** p50 of each part. */
  parts: { enqueue: number; pickup: number; run: number };
}

/** `send`: who enqueues (ours: `JobQueue.enqueue` in a transaction; raw: `boss.send`); `work`: which worker, on its own queue. */
async function latency(send: Kind, work: Kind = send): Promise<Latency> {
  const job = work === 'raw' ? rawTwin : noopJob;
  const queue = job.name;
  // As before a drain: planner statistics taken now (no queued job), not at the last drain's backlog, whose
  // deleted rows would otherwise still be in the indexes the fetch reads.
  await vacuum();
  await primeQueueStats(queue, 0);
  const worker = await (work === 'raw' ? startRaw(url) : startOurs(url));
  await sleep(1000); // the first fetch comes back empty: the queue is idle, the worker waits on NOTIFY
  const since = new Date();
  const total = RATE * LATENCY_SECONDS;
  Object.assign(progress, { count: 0, firstAt: 0, target: total });
  const sends: Promise<unknown>[] = [];
  const sendOne = (n: number) => {
    const data = { n, sent_at: Date.now() };
    return send === 'ours'
      ? db.transaction((trx) => jobQueue.enqueue(trx, job, data, { organizationId: organizationOf(n) }))
      : sender.send(queue, data, { group: { id: organizationOf(n) } });
  };
  const started = performance.now();
  let sent = 0;
  while (sent < total) {
    const due = Math.min(total, Math.floor(((performance.now() - started) * RATE) / 1000) + 1);
    while (sent < due) sends.push(sendOne(sent++));
    await sleep(1);
  }
  await Promise.all(sends);
  const end = await finished(queue, total);
  await worker.stop();
  // Whole (send → completed_on) and its parts: send → created_on (enqueue), → started_on (pick-up), → completed_on (run + complete).
  const { rows } = await db.raw(
    `WITH t AS (
       SELECT extract(epoch FROM created_on) * 1000 AS created, extract(epoch FROM started_on) * 1000 AS started,
              extract(epoch FROM completed_on) * 1000 AS completed, (data->>'sent_at')::float8 AS sent
         FROM pgboss.job WHERE name = ? AND created_on >= ? AND state = 'completed')
     SELECT percentile_cont(ARRAY[0.5, 0.95]) WITHIN GROUP (ORDER BY completed - sent) AS p,
            percentile_cont(0.5) WITHIN GROUP (ORDER BY created - sent) AS enqueue,
            percentile_cont(0.5) WITHIN GROUP (ORDER BY started - created) AS pickup,
            percentile_cont(0.5) WITHIN GROUP (ORDER BY completed - started) AS run
       FROM t`,
    [queue, since],
  );
  await db.raw('DELETE FROM pgboss.job WHERE name = ? AND created_on >= ?', [queue, since]);
  const [p50, p95] = rows[0].p as number[];
  const { enqueue, pickup, run } = rows[0] as { enqueue: number; pickup: number; run: number };
  return { p50: p50!, p95: p95!, achieved: total / ((end - started) / 1000), parts: { enqueue, pickup, run } };
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
          `   p50 parts enqueue + pick-up + run: raw ${parts(raw)}, ours ${parts(our)}`,
      );
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
      const enqueueSide = await latency('ours', 'raw');
      const workerSide = await latency('raw', 'ours');
      const line = (l: Latency) =>
        `p50 ${ms(l.p50)} p95 ${ms(l.p95)} (${rate(l.achieved)}; parts ${l.parts.enqueue.toFixed(1)} + ${l.parts.pickup.toFixed(1)} + ${l.parts.run.toFixed(1)})`;
      console.log(`    mixed: ours enqueue → raw worker ${line(enqueueSide)}`);
      console.log(`           raw send → ours worker    ${line(workerSide)}`);
      result.latency.mixed = { enqueueSide: enqueueSide.p50, workerSide: workerSide.p50 };
    }
  }

  if (VARIANTS === 'all' || (VARIANTS === 'auto' && result.ratio < GOAL)) {
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

const loadBefore = load();
const results: PhaseResult[] = [];
try {
  console.log(
    'job throughput: our runtime (startWorker) vs raw pg-boss, ' +
      `no-op handler; WORKER_CONCURRENCY ${config.WORKER_CONCURRENCY}, JOB_ORGANIZATION_CONCURRENCY ${config.JOB_ORGANIZATION_CONCURRENCY}, ` +
      `worker log level ${WORKER_LOG_LEVEL}; load ${loadBefore}`,
  );
  results.push(await phase('phase 1: job table without finished jobs'));
  if (FINISHED > 0) {
    const seconds = await insertFinished(FINISHED);
    console.log(`\ninserted ${FINISHED.toLocaleString('en-US')} finished jobs and analyzed in ${seconds.toFixed(1)} s`);
    results.push(await phase(`phase 2: job table with ${FINISHED.toLocaleString('en-US')} finished jobs`));
  }

  const day = new Date().toISOString().slice(0, 10);
  console.log('\n---- summary (README) ----');
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
  console.log(`goal ≥ ${GOAL}× raw: ${results.every((r) => r.ratio >= GOAL) ? 'met' : 'not met'}`);
} finally {
  await sender.stop({ graceful: false, close: true });
  await db.destroy();
  await database.dispose();
}
