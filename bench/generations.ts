/**
 * Generations end to end through the sandbox provider: BENCH_GENERATIONS image generations (200)
 * posted by BENCH_CLIENTS clients (16) to a web process, run by BENCH_WORKERS worker processes (4,
 * each WORKER_CONCURRENCY=4), each timed from POST /generations to `succeeded` (seen by polling
 * its row every 20 ms from this process). Baseline in the same run, on the same database and
 * workers' machine: raw pg-boss — the same number of jobs sent by as many senders to a queue that
 * 4 PgBoss instances work with a no-op handler, send → completion seen. Prints throughput, latency
 * percentiles and the ratio.
 * Run: npm run bench:generations   (embedded PostgreSQL, throw-away database; ~1 min)
 */
import { signToken } from '../src/auth/sign.ts';
import { grantCredits } from '../src/credits/ledger.ts';
import { createDb } from '../src/db/knex.ts';
import { createBoss } from '../src/jobs/boss.ts';
import { createLogger } from '../src/platform/logger.ts';
import { startWeb } from '../src/web.ts';
import { TEST_JWT_SECRET, testConfig } from '../test/support/config.ts';
import { createTestDatabase } from '../test/support/database.ts';
import { nodeWithTsx, run } from '../test/support/processes.ts';

const GENERATIONS = Number(process.env.BENCH_GENERATIONS ?? 200);
const CLIENTS = Number(process.env.BENCH_CLIENTS ?? 16);
const WORKERS = Number(process.env.BENCH_WORKERS ?? 4);

const database = await createTestDatabase();
const db = createDb(database.url, { max: CLIENTS + 4 });
const config = testConfig({ NODE_ENV: 'production', RATE_LIMIT_PER_MINUTE: '100000000', LOG_LEVEL: 'warn', STARTER_CREDITS: '0' });
const web = await startWeb(config, database.url, createLogger(config, 'bench-web'));
const address = web.server.address();
const base = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
const workers = Array.from({ length: WORKERS }, () =>
  run(...nodeWithTsx('workers/main.ts'), {
    DATABASE_URL: database.url,
    JWT_SECRET: TEST_JWT_SECRET,
    NODE_ENV: 'production',
    LOG_LEVEL: 'warn',
    WORKER_CONCURRENCY: '4',
    WORKER_POLL_INTERVAL_SECONDS: '2',
  }),
);

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
const summary = (label: string, latencies: number[], seconds: number) => {
  const sorted = [...latencies].sort((a, b) => a - b);
  const rate = latencies.length / seconds;
  console.log(
    `${label.padEnd(46)} ${rate.toFixed(1).padStart(7)}/s   p50 ${percentile(sorted, 50).toFixed(1).padStart(7)} ms   p95 ${percentile(sorted, 95).toFixed(1).padStart(7)} ms   (n=${latencies.length})`,
  );
  return { rate, p50: percentile(sorted, 50) };
};

/** `count` tasks over `clients` loops; returns each task's latency and the wall time. */
async function load(count: number, clients: number, task: (i: number) => Promise<number>): Promise<{ latencies: number[]; seconds: number }> {
  const latencies: number[] = [];
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (next < count) latencies.push(await task(next++));
    }),
  );
  return { latencies, seconds: (performance.now() - started) / 1000 };
}

try {
  await db.raw(`INSERT INTO users (id, email, name) VALUES ('bench-user', 'b@bench.test', 'Bench')`);
  await db.raw(`INSERT INTO organizations (id, name, slug, created_by_id) VALUES ('bench-org', 'Bench', 'bench', 'bench-user')`);
  await db.raw(`INSERT INTO organization_members (organization_id, user_id, role) VALUES ('bench-org', 'bench-user', 'owner')`);
  await db.transaction((trx) => grantCredits(trx, { organizationId: 'bench-org', source: 'purchase', amount: 1_000_000_000, description: 'Bench credits' }));
  const token = signToken(TEST_JWT_SECRET, { sub: 'bench-user', email: 'b@bench.test', name: 'Bench', ttlSeconds: 3600 });
  for (let tries = 0; ; tries++) {
    const { rows } = await db.raw(`SELECT count(DISTINCT pid)::int AS n FROM pg_stat_activity WHERE application_name = 'workspace-worker-boss'`);
    if (rows[0].n >= WORKERS) break;
    if (tries > 600) throw new Error('the workers did not start');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  console.log(
    `${GENERATIONS} image generations, ${CLIENTS} clients, ${WORKERS} worker processes × 4 (load average ${(await import('node:os')).loadavg()[0]!.toFixed(2)})`,
  );

  const generate = async (i: number) => {
    const started = performance.now();
    const res = await fetch(`${base}/generations`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ organization_id: 'bench-org', kind: 'image', prompt: `A bench picture number ${i}` }),
    });
    const body = (await res.json()) as { generation?: { id: string } };
    if (res.status !== 201) throw new Error(`POST /generations answered ${res.status}: ${JSON.stringify(body)}`);
    for (;;) {
      const row = await db('generations').where({ id: body.generation!.id }).first('status');
      if (row.status === 'succeeded') return performance.now() - started;
      if (row.status === 'failed' || row.status === 'canceled') throw new Error(`generation ${row.status}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  };

  // Baseline: raw pg-boss on the same database, worked by as many PgBoss instances with a no-op handler.
  const queue = 'bench-noop';
  // The same roles (and so the same LISTEN/NOTIFY pick-up) as the web process and the workers.
  const bosses = [
    createBoss(database.url, 'web'),
    ...Array.from({ length: WORKERS }, () => createBoss(database.url, 'worker', { supervise: false, schedule: false })),
  ];
  await Promise.all(bosses.map((b) => b.start()));
  const [sender, ...consumers] = bosses;
  await sender!.createQueue(queue, { notify: true });
  const done = new Map<string, () => void>();
  for (const consumer of consumers)
    await consumer.work<{ key: string }>(queue, { localConcurrency: 4, pollingIntervalSeconds: 2, notifyPollingIntervalSeconds: 2 }, async ([job]) => {
      done.get(job!.data.key)?.();
    });
  const raw = async (i: number) => {
    const started = performance.now();
    const finished = new Promise<void>((resolve) => done.set(`k${i}`, resolve));
    await sender!.send(queue, { key: `k${i}` });
    await finished;
    return performance.now() - started;
  };

  await load(Math.min(20, GENERATIONS), CLIENTS, generate); // warm-up
  const rawRun = await load(GENERATIONS, CLIENTS, raw);
  const genRun = await load(GENERATIONS, CLIENTS, generate);
  const baseline = summary('baseline: raw pg-boss send → no-op handler', rawRun.latencies, rawRun.seconds);
  const measured = summary('generation: POST → succeeded (sandbox image)', genRun.latencies, genRun.seconds);
  console.log(`ratio: throughput ${(measured.rate / baseline.rate).toFixed(2)}× raw pg-boss, p50 ${(measured.p50 / baseline.p50).toFixed(1)}× its p50`);
  const assets = await db('assets').whereNotNull('generation_id').count('* as n').first();
  const captures = await db('credit_ledger_entries').where({ kind: 'capture' }).count('* as n').first();
  console.log(`after the run: ${assets?.n} assets and ${captures?.n} captures for ${Math.min(20, GENERATIONS) + GENERATIONS} generations`);
  await Promise.all(bosses.map((b) => b.stop({ graceful: false, close: true })));
} finally {
  for (const worker of workers) worker.child.kill('SIGTERM');
  await Promise.all(workers.map((w) => w.exited));
  await web.stop();
  await db.destroy();
  await database.dispose();
}
