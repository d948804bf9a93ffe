/**
 * BENCH_TASKS scheduled tasks (10,000) due in the same minute: the time the dispatcher takes to
 * claim them and enqueue one run each (and that three dispatchers racing still make exactly one run
 * per task), then BENCH_WORKERS worker processes (4) working the runs for BENCH_SECONDS (60): how
 * many start, and how late behind their slot (p50/p95 of started_at − scheduled_for). Each run is a
 * real one: a conversation, the prompt, a sandbox chat run, the capture. Baseline in the same run:
 * a bare single-row UPDATE loop on the same database (the floor of any per-task write).
 * Run: npm run bench:scheduled-tasks   (embedded PostgreSQL, throw-away database; ~2 min)
 */
import { grantCredits } from '../src/credits/ledger.ts';
import { createDb } from '../src/db/knex.ts';
import { createBoss } from '../src/jobs/boss.ts';
import { JobQueue } from '../src/jobs/enqueue.ts';
import { dispatchDueTasks } from '../src/scheduled-tasks/dispatcher.ts';
import { TEST_JWT_SECRET } from '../test/support/config.ts';
import { createTestDatabase } from '../test/support/database.ts';
import { nodeWithTsx, run } from '../test/support/processes.ts';

const TASKS = Number(process.env.BENCH_TASKS ?? 10_000);
const WORKERS = Number(process.env.BENCH_WORKERS ?? 4);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 60);

const database = await createTestDatabase();
const pools = [0, 1, 2].map(() => createDb(database.url, { max: 4 }));
const db = pools[0]!;
const bosses = pools.map(() => createBoss(database.url, 'web'));
await Promise.all(bosses.map((b) => b.start()));
const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;

try {
  await db.raw(`INSERT INTO users (id, email, name) VALUES ('bench-user', 'b@bench.test', 'Bench')`);
  await db.raw(`INSERT INTO organizations (id, name, slug, created_by_id) VALUES ('bench-org', 'Bench', 'bench', 'bench-user')`);
  await db.raw(`INSERT INTO organization_members (organization_id, user_id, role) VALUES ('bench-org', 'bench-user', 'owner')`);
  await db.transaction((trx) => grantCredits(trx, { organizationId: 'bench-org', source: 'purchase', amount: 1_000_000_000, description: 'Bench credits' }));
  // Every task due at the same slot: the top of the current minute.
  const slot = new Date(Math.floor(Date.now() / 60_000) * 60_000);
  await db.raw(
    `INSERT INTO scheduled_tasks (organization_id, created_by_id, title, prompt, cron, timezone, model, next_run_at)
     SELECT 'bench-org', 'bench-user', 'Task ' || g, 'Say hello', '* * * * *', 'UTC', 'sandbox-chat', ? FROM generate_series(1, ?) g`,
    [slot, TASKS],
  );
  await db.raw('ANALYZE scheduled_tasks');

  // Baseline: the floor of a per-task write, sequential single-row UPDATEs.
  await db.raw('CREATE TABLE bench_counter (id int PRIMARY KEY, n bigint NOT NULL DEFAULT 0)');
  await db.raw('INSERT INTO bench_counter VALUES (1, 0)');
  const floorStarted = performance.now();
  for (let i = 0; i < 2000; i++) await db.raw('UPDATE bench_counter SET n = n + 1 WHERE id = 1');
  const floorPerSecond = 2000 / ((performance.now() - floorStarted) / 1000);

  const now = new Date(slot.getTime() + 5_000);
  const started = performance.now();
  const created = await Promise.all(pools.map((pool, i) => dispatchDueTasks({ db: pool, jobs: new JobQueue(bosses[i]!) }, now)));
  const dispatchSeconds = (performance.now() - started) / 1000;
  const runs = Number((await db('scheduled_task_runs').count('* as n').first())?.n);
  console.log(`${TASKS} tasks due at ${slot.toISOString()}, 3 dispatchers racing (load average ${(await import('node:os')).loadavg()[0]!.toFixed(2)})`);
  console.log(
    `dispatch: ${runs} runs (${created.join(' + ')}) enqueued in ${dispatchSeconds.toFixed(2)} s = ${(runs / dispatchSeconds).toFixed(0)} tasks/s; bare single-row UPDATE: ${floorPerSecond.toFixed(0)}/s → ${(runs / dispatchSeconds / floorPerSecond).toFixed(2)}× the floor`,
  );

  const workers = Array.from({ length: WORKERS }, () =>
    run(...nodeWithTsx('workers/main.ts'), {
      DATABASE_URL: database.url,
      JWT_SECRET: TEST_JWT_SECRET,
      NODE_ENV: 'production',
      LOG_LEVEL: 'error',
      WORKER_CONCURRENCY: '4',
      WORKER_POLL_INTERVAL_SECONDS: '2',
    }),
  );
  await new Promise((resolve) => setTimeout(resolve, SECONDS * 1000));
  for (const worker of workers) worker.child.kill('SIGTERM');
  await Promise.all(workers.map((w) => w.exited));

  const { rows } = await db.raw(
    `SELECT extract(epoch FROM started_at - scheduled_for) * 1000 AS late_ms, state FROM scheduled_task_runs WHERE started_at IS NOT NULL`,
  );
  const lateness = (rows as { late_ms: string }[]).map((r) => Number(r.late_ms)).sort((a, b) => a - b);
  const succeeded = (rows as { state: string }[]).filter((r) => r.state === 'succeeded').length;
  console.log(
    `runs with ${WORKERS} workers × 4 in ${SECONDS} s: ${lateness.length} started (${(lateness.length / SECONDS).toFixed(1)}/s), ${succeeded} succeeded; lateness behind the slot p50 ${(pct(lateness, 50) / 1000).toFixed(1)} s, p95 ${(pct(lateness, 95) / 1000).toFixed(1)} s (the slot is 5 s before the dispatch)`,
  );
  const duplicates = await db.raw(
    `SELECT count(*)::int AS n FROM (SELECT task_id FROM scheduled_task_runs GROUP BY task_id, scheduled_for HAVING count(*) > 1) d`,
  );
  console.log(`duplicate runs for one slot: ${duplicates.rows[0].n}`);
} finally {
  await Promise.all(bosses.map((b) => b.stop({ graceful: false, close: true })));
  for (const pool of pools) await pool.destroy();
  await database.dispose();
}
