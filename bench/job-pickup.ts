// `npm run bench:jobs`: how fast an idle worker picks up a job (send → handler start), with
// LISTEN/NOTIFY and with polling only, and how fast a backlog drains with fresh vs stale planner
// statistics on pg-boss's job table. Uses DATABASE_URL's server, else an embedded PostgreSQL in a
// temporary directory. Env: BENCH_PICKUP_JOBS (200), BENCH_BACKLOG (20000).
import { randomBytes } from 'node:crypto';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { PgBoss } from 'pg-boss';
import { startEmbeddedPostgres, type EmbeddedDatabase } from '../src/db/embedded.ts';
import { createDb, type Db } from '../src/db/knex.ts';
import { createBoss } from '../src/jobs/boss.ts';
import { createLogger } from '../src/platform/logger.ts';
import { release } from '../src/app/release.ts';
import { readFlags } from './support/bench.ts';

// --name=value flags as BENCH_NAME; `--help` prints the comment above.
readFlags();

const PICKUP_JOBS = Number(process.env.BENCH_PICKUP_JOBS ?? 200);
const POLL_JOBS = 20;
const BACKLOG = Number(process.env.BENCH_BACKLOG ?? 20_000);
const log = createLogger({ LOG_LEVEL: 'warn' }, 'bench');

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
const ms = (value: number) => `${value.toFixed(1)} ms`;

async function database(): Promise<{ url: string; cleanup(): Promise<void> }> {
  let embedded: EmbeddedDatabase | undefined;
  let dir: string | undefined;
  let adminUrl = process.env.DATABASE_URL;
  if (!adminUrl) {
    dir = await mkdtemp(path.join(tmpdir(), 'workspace-bench-'));
    await chmod(dir, 0o755);
    embedded = await startEmbeddedPostgres({ dir, database: 'postgres', log });
    adminUrl = embedded.url;
  }
  const name = `bench_jobs_${randomBytes(4).toString('hex')}`;
  const admin = createDb(adminUrl, { max: 1 });
  await admin.raw(`CREATE DATABASE ${name}`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async cleanup() {
      await admin.raw(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.destroy();
      await embedded?.stop();
      if (dir) await rm(dir, { recursive: true, force: true });
    },
  };
}

/** Sends jobs one at a time to an idle queue; each waits for the previous one's pickup. */
async function pickupLatency(sender: PgBoss, worker: PgBoss, queue: string, count: number, notify: boolean): Promise<number[]> {
  await sender.createQueue(queue, { notify });
  const latencies: number[] = [];
  let picked: (() => void) | undefined;
  await worker.work<{ sentAt: number }>(queue, { pollingIntervalSeconds: 0.5, notifyPollingIntervalSeconds: 30 }, async ([job]) => {
    latencies.push(performance.timeOrigin + performance.now() - job!.data.sentAt);
    picked?.();
  });
  await sleep(1000); // let the worker's first fetch come back empty: the queue is idle
  for (let i = 0; i < count; i++) {
    const done = new Promise<void>((resolve) => (picked = resolve));
    await sender.send(queue, { sentAt: performance.timeOrigin + performance.now() });
    await done;
    await sleep(notify ? 5 : Math.random() * 500); // polling: land at random points of the poll cycle
  }
  await worker.offWork(queue);
  return latencies.sort((a, b) => a - b);
}

/** Inserts a backlog and measures how long one worker (4 × fetches of 50, back to back) takes to run it. */
async function drainBacklog(
  sender: PgBoss,
  worker: PgBoss,
  db: Db,
  queue: string,
  stats: 'fresh' | 'stale',
): Promise<{ jobsPerSecond: number; fetchMs: number }> {
  await db.raw('DELETE FROM pgboss.job WHERE name = ?', [queue]);
  if (stats === 'stale') {
    // The planner last saw the table (nearly) empty, and autovacuum is kept from correcting it.
    await db.raw('ANALYZE pgboss.job_common');
    await db.raw('ALTER TABLE pgboss.job_common SET (autovacuum_enabled = false)');
  }
  for (let i = 0; i < BACKLOG; i += 5000) {
    await sender.insert(
      queue,
      Array.from({ length: Math.min(5000, BACKLOG - i) }, (_, j) => ({ data: { n: i + j } })),
    );
  }
  if (stats === 'fresh') await db.raw('ANALYZE pgboss.job_common');
  let done = 0;
  let finished!: () => void;
  const all = new Promise<void>((resolve) => (finished = resolve));
  const started = performance.now();
  await worker.work(queue, { batchSize: 50, localConcurrency: 4, pollingIntervalSeconds: 0.5, burstWhenBatchFull: true }, async (jobs) => {
    done += jobs.length;
    if (done >= BACKLOG) finished();
  });
  await all;
  const seconds = (performance.now() - started) / 1000;
  await worker.offWork(queue);
  // One fetch of 50 as a worker issues it, against the same table and statistics.
  await sender.insert(
    queue,
    Array.from({ length: 5000 }, (_, n) => ({ data: { n } })),
  );
  const fetchStarted = performance.now();
  await sender.fetch(queue, { batchSize: 50 });
  const fetchMs = performance.now() - fetchStarted;
  if (stats === 'stale') await db.raw('ALTER TABLE pgboss.job_common RESET (autovacuum_enabled)');
  return { jobsPerSecond: BACKLOG / seconds, fetchMs };
}

async function main() {
  const { url, cleanup } = await database();
  await release(url, log);
  const db = createDb(url, { max: 2 });
  const sender = createBoss(url, 'web', { max: 4 });
  const worker = createBoss(url, 'worker', { supervise: false, schedule: false });
  await sender.start();
  await worker.start();
  try {
    console.log(`pg-boss pickup latency (send → handler start) on an idle queue`);
    const notified = await pickupLatency(sender, worker, 'bench.pickup-notify', PICKUP_JOBS, true);
    console.log(
      `  LISTEN/NOTIFY, ${notified.length} jobs: p50 ${ms(percentile(notified, 50))}, p95 ${ms(percentile(notified, 95))}, max ${ms(notified.at(-1)!)}`,
    );
    const polled = await pickupLatency(sender, worker, 'bench.pickup-poll', POLL_JOBS, false);
    console.log(`  polling every 0.5 s, ${polled.length} jobs: p50 ${ms(percentile(polled, 50))}, p95 ${ms(percentile(polled, 95))}`);

    console.log(`backlog of ${BACKLOG} jobs, one worker, 4 × batches of 50`);
    await sender.createQueue('bench.backlog', { notify: true });
    for (const stats of ['stale', 'fresh'] as const) {
      const result = await drainBacklog(sender, worker, db, 'bench.backlog', stats);
      console.log(`  ${stats} statistics: ${Math.round(result.jobsPerSecond)} jobs/s; one fetch of 50 from 5000 queued took ${ms(result.fetchMs)}`);
    }
  } finally {
    await worker.stop({ graceful: false, close: true });
    await sender.stop({ graceful: false, close: true });
    await db.destroy();
    await cleanup();
  }
}

await main();
