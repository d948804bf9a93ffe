/**
 * BENCH_TASKS scheduled tasks (2,000; `--tasks=10000` for the issue's figure) spread over
 * BENCH_ORGANIZATIONS organizations (20), all due at the same instant (the slot), run to the end by
 * BENCH_WORKERS real worker processes (2; workers/main.ts, WORKER_CONCURRENCY BENCH_CONCURRENCY = 4,
 * production queue policy) with the sandbox chat model. At the slot the bench sends the dispatcher's
 * job, as pg-boss's cron does at the minute; a worker claims the due tasks and enqueues one start job
 * per batch of 200 runs; the start job opens the batch's conversations and queues their chat turns and
 * ends; each chat run's end sends the finish job. Measured:
 * every run finished (and how), lateness behind the slot of the run's start, of its chat turn's
 * beginning (its job picked up) and of its end
 * (p50/p95/max; goal: start p95 ≤ 30 s), runs/s (slot → last run finished), and per queue the
 * median wait and run time of its jobs.
 *
 * Baseline in the same run, before and after ours: raw pg-boss send + work of the same number of
 * jobs (as many group ids) with the same worker count, concurrency and work options — BENCH_WORKERS
 * processes of bench/support/raw-worker.ts with a no-op handler, the jobs inserted in batches of 200
 * (as the dispatcher does); jobs/s from the first send to the last completion. Ratio: our runs/s over
 * the mean of the two raw rates (a run is three jobs: start, chat turn, finish).
 *
 * Also reported: when pg-boss's own cron sent the dispatcher during the run (its pass runs every
 * 30 s, so the real dispatch comes 0–30 s after the minute — on top of the lateness measured here).
 *
 * Flags (or BENCH_*): --tasks (2000), --organizations (20), --workers (2), --concurrency (4),
 * --timeout (seconds to wait for the runs, 900), --sandbox-delay-ms (CHAT_SANDBOX_DELAY_MS, 0),
 * --log-level (the workers', warn), --pg-statements (0; 1: an embedded server with pg_stat_statements,
 * and the SQL that took the time per run).
 * Run: npm run bench:scheduled-tasks                   (~2 min)
 *      npm run bench:scheduled-tasks -- --tasks=10000  (~10 min on a shared 2-core machine)
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { grantCredits } from '../src/credits/ledger.ts';
import { reconcileCredits } from '../src/credits/reconcile.ts';
import { createDb } from '../src/db/knex.ts';
import { createBoss } from '../src/jobs/boss.ts';
import { JobQueue } from '../src/jobs/enqueue.ts';
import { chatRunJob } from '../src/conversations/jobs.ts';
import { dispatchScheduledTasksJob, scheduledTaskFinishJob, scheduledTaskRunJob, scheduledTaskStartJob } from '../src/scheduled-tasks/jobs.ts';
import { TEST_JWT_SECRET } from '../test/support/config.ts';
import { type ChildRun, nodeWithTsx, run } from '../test/support/processes.ts';
import { benchDatabase, resetStatements, topStatements } from './support/database.ts';
import { ascending, countDatabaseWork, cpuSeconds, fmt, int, load, loads, percentile, postgresCpu, readFlags, text, waitFor } from './support/bench.ts';

readFlags();
const TASKS = Math.max(1, int('TASKS', 2000));
const ORGANIZATIONS = Math.max(1, int('ORGANIZATIONS', 20));
const WORKERS = Math.max(1, int('WORKERS', 2));
const CONCURRENCY = Math.max(1, int('CONCURRENCY', 4));
const TIMEOUT_SECONDS = Math.max(10, int('TIMEOUT', 900));
const SANDBOX_DELAY_MS = int('SANDBOX_DELAY_MS', 0);
const LOG_LEVEL = text('LOG_LEVEL', 'warn');
const BATCH = 200;

const database = await benchDatabase(int('PG_STATEMENTS', 0) > 0);
let statements: string[] = [];
const db = createDb(database.url, { max: 6 });
const sender = createBoss(database.url, 'web');
sender.on('error', (error) => console.error('sender pg-boss error', error));
await sender.start();
const jobs = new JobQueue(sender);
const organizations = Array.from({ length: ORGANIZATIONS }, (_, i) => `bench-org-${i}`);
const workerEnv = {
  DATABASE_URL: database.url,
  JWT_SECRET: TEST_JWT_SECRET,
  NODE_ENV: 'production',
  LOG_LEVEL,
  WORKER_CONCURRENCY: String(CONCURRENCY),
  WORKER_POLL_INTERVAL_SECONDS: '2',
  CHAT_SANDBOX_DELAY_MS: String(SANDBOX_DELAY_MS),
};
const children: ChildRun[] = [];
const stopAll = async (list: ChildRun[]) => {
  for (const child of list) if (child.child.exitCode === null && child.child.signalCode === null) child.child.kill('SIGTERM');
  await Promise.all(list.map((child) => child.exited));
};
const distribution = (values: number[]) => {
  const sorted = ascending(values);
  return `p50 ${fmt.s(percentile(sorted, 50))}, p95 ${fmt.s(percentile(sorted, 95))}, max ${fmt.s(sorted.at(-1) ?? Number.NaN)}`;
};
const pgCpu = await postgresCpu(db);
/** CPU seconds the given processes and the database server used while `work` ran, per item of `count`, in ms. */
async function cpuPer<T>(pids: number[], count: number, work: () => Promise<T>): Promise<{ value: T; workers: number; postgres: number }> {
  const before = { workers: pids.map(cpuSeconds), postgres: pgCpu() };
  const value = await work();
  const workers = pids.reduce((sum, pid, i) => sum + cpuSeconds(pid) - before.workers[i]!, 0);
  return { value, workers: (workers * 1000) / count, postgres: ((pgCpu() - before.postgres) * 1000) / count };
}
const cpuLine = (c: { workers: number; postgres: number }, unit: string) =>
  `CPU per ${unit}: workers ${c.workers.toFixed(1)} ms, PostgreSQL ${c.postgres.toFixed(1)} ms`;
const dbNow = async () => new Date((await db.raw('SELECT now() AS t')).rows[0].t as Date);

/** Raw pg-boss: BENCH_TASKS jobs sent in batches to BENCH_WORKERS raw worker processes; jobs/s first send → last completion. */
async function raw(round: number): Promise<{ rate: number; pickup: number[]; cpu: { workers: number; postgres: number }; database: string }> {
  const queue = `bench-raw-${round}`;
  await sender.createQueue(queue, { policy: 'standard', notify: true, retryLimit: 2, retryDelay: 5, expireInSeconds: 300, heartbeatSeconds: 20 });
  const workers = Array.from({ length: WORKERS }, () => run(...nodeWithTsx('bench/support/raw-worker.ts'), { ...workerEnv, RAW_QUEUE: queue }));
  children.push(...workers);
  await Promise.all(workers.map((w) => w.waitForOutput(/ready/)));
  // Counted in round 2 only (its two ends take 21 s, outside the timed part).
  const counter = round === 2 ? await countDatabaseWork(db) : null;
  const started = await dbNow();
  const { workers: workersCpu, postgres } = await cpuPer(
    workers.map((w) => w.child.pid!),
    TASKS,
    async () => {
      for (let i = 0; i < TASKS; i += BATCH)
        await sender.insert(
          queue,
          Array.from({ length: Math.min(BATCH, TASKS - i) }, (_, j) => ({ data: { n: i + j }, group: { id: organizations[(i + j) % ORGANIZATIONS]! } })),
        );
      await waitFor(
        `${queue} to drain`,
        async () => {
          const { rows } = await db.raw(`SELECT count(*)::int AS n FROM pgboss.job WHERE name = ? AND state = 'completed'`, [queue]);
          return rows[0].n >= TASKS ? true : undefined;
        },
        TIMEOUT_SECONDS * 1000,
        50,
      );
    },
  );
  const cpu = { workers: workersCpu, postgres };
  const { rows } = await db.raw(
    `SELECT extract(epoch FROM max(completed_on) - ?::timestamptz) AS seconds,
            array_agg(extract(epoch FROM started_on - ?::timestamptz) * 1000) AS pickup
       FROM pgboss.job WHERE name = ?`,
    [started, started, queue],
  );
  await stopAll(workers);
  const database = (await counter?.report(TASKS)) ?? '';
  await db.raw('DELETE FROM pgboss.job WHERE name = ?', [queue]);
  return { rate: TASKS / Number(rows[0].seconds), pickup: (rows[0].pickup as string[]).map(Number), cpu, database };
}

try {
  await db.raw(`INSERT INTO users (id, email, name) VALUES ('bench-user', 'b@bench.test', 'Bench')`);
  for (const org of organizations) {
    await db.raw(`INSERT INTO organizations (id, name, slug, created_by_id) VALUES (?, ?, ?, 'bench-user')`, [org, org, org]);
    await db.raw(`INSERT INTO organization_members (organization_id, user_id, role) VALUES (?, 'bench-user', 'owner')`, [org]);
    await db.transaction((trx) => grantCredits(trx, { organizationId: org, source: 'purchase', amount: 1_000_000_000, description: 'Bench credits' }));
  }
  console.log(
    `scheduled tasks: ${TASKS.toLocaleString('en-US')} tasks due at one instant, ${ORGANIZATIONS} organizations, ${WORKERS} worker processes × ${CONCURRENCY}, ` +
      `sandbox chat (delay ${SANDBOX_DELAY_MS} ms); load ${loads()} (1/5/15 min)`,
  );

  const raw1 = await raw(1);
  console.log(
    `raw pg-boss, round 1: ${TASKS} jobs sent + worked at ${fmt.rate(raw1.rate, ' jobs/s')}; pick-up after first send ${distribution(raw1.pickup)}; ${cpuLine(raw1.cpu, 'job')} (load ${load()})`,
  );

  // Ours: the workers up and idle, then the tasks, due a moment later.
  const workers = Array.from({ length: WORKERS }, () => run(...nodeWithTsx('workers/main.ts'), workerEnv));
  children.push(...workers);
  await waitFor(
    'the workers to start',
    async () => {
      for (const w of workers) if (w.child.exitCode !== null) throw new Error(`a worker exited: ${w.stderr().slice(-2000)}`);
      const { rows } = await db.raw(`SELECT count(*)::int AS n FROM job_workers WHERE stopped_at IS NULL`);
      return rows[0].n >= WORKERS ? true : undefined;
    },
    120_000,
  );
  await sleep(2000); // subscriptions follow registration; the first fetches come back empty
  const counter = await countDatabaseWork(db); // its 10.5 s wait comes before the slot
  const slot = new Date(Math.ceil(((await dbNow()).getTime() + 2000) / 1000) * 1000);
  // A yearly cron, due now: the slot is the task's next_run_at, the next one a year away (no second run in the bench).
  await db.raw(
    `INSERT INTO scheduled_tasks (organization_id, created_by_id, title, prompt, cron, timezone, model, next_run_at)
     SELECT 'bench-org-' || (g % ?), 'bench-user', 'Task ' || g, 'Say hello', '0 0 1 1 *', 'UTC', 'sandbox-chat', ? FROM generate_series(0, ? - 1) g`,
    [ORGANIZATIONS, slot, TASKS],
  );
  await db.raw('ANALYZE scheduled_tasks');
  await sleep(Math.max(0, slot.getTime() - (await dbNow()).getTime()));
  const { value: dispatchJob, ...oursCpu } = await cpuPer(
    workers.map((w) => w.child.pid!),
    TASKS,
    async () => {
      if (database.statements) await resetStatements(db);
      const id = await db.transaction((trx) => jobs.enqueue(trx, dispatchScheduledTasksJob, {}, { organizationId: null }));
      console.log(`slot ${slot.toISOString()}: dispatcher job sent (load ${load()})`);
      const deadline = performance.now() + TIMEOUT_SECONDS * 1000;
      let lastFinished = -1;
      let lastProgressAt = performance.now();
      for (;;) {
        await sleep(5000);
        const { rows } = await db.raw(
          `SELECT count(*)::int AS runs, count(started_at)::int AS started, count(finished_at)::int AS finished FROM scheduled_task_runs`,
        );
        const { runs, started, finished } = rows[0] as { runs: number; started: number; finished: number };
        const elapsed = ((Date.now() - slot.getTime()) / 1000).toFixed(0);
        console.log(`  +${elapsed.padStart(4)} s: ${runs} runs created, ${started} started, ${finished} finished (load ${load()})`);
        if (finished >= TASKS) {
          if (database.statements) statements = await topStatements(db, TASKS);
          return id;
        }
        if (finished !== lastFinished) [lastFinished, lastProgressAt] = [finished, performance.now()];
        if (performance.now() - lastProgressAt > 60_000) throw new Error('no run finished for 60 s: stalled');
        if (performance.now() > deadline) throw new Error(`not every run finished within ${TIMEOUT_SECONDS} s`);
      }
    },
  );

  const { rows: runRows } = await db.raw(
    `SELECT status, extract(epoch FROM created_at - scheduled_for) * 1000 AS created_ms, extract(epoch FROM started_at - scheduled_for) * 1000 AS started_ms,
            extract(epoch FROM finished_at - scheduled_for) * 1000 AS finished_ms FROM scheduled_task_runs`,
  );
  const rows = runRows as { status: string; created_ms: string; started_ms: string | null; finished_ms: string }[];
  const states = new Map<string, number>();
  for (const r of rows) states.set(r.status, (states.get(r.status) ?? 0) + 1);
  const startLate = rows.filter((r) => r.started_ms !== null).map((r) => Number(r.started_ms));
  // When each run's chat turn began (its job picked up): the model's work, after the run's start queued it.
  const { rows: turnRows } = await db.raw(
    `SELECT extract(epoch FROM j.started_on - r.scheduled_for) * 1000 AS ms
       FROM scheduled_task_runs r JOIN pgboss.job j ON j.name = ? AND j.data->>'run_id' = r.chat_run_id::text AND j.started_on IS NOT NULL`,
    [chatRunJob.name],
  );
  const turnLate = (turnRows as { ms: string }[]).map((r) => Number(r.ms));
  const endLate = rows.map((r) => Number(r.finished_ms));
  const lastEnd = Math.max(...endLate);
  const oursRate = TASKS / (lastEnd / 1000);
  const loadOurs = load();

  // Where the time went, per queue: wait (created → started) and run (started → completed), medians and p95.
  const { rows: perQueue } = await db.raw(
    `SELECT name, count(*)::int AS n, count(*) FILTER (WHERE state <> 'completed')::int AS not_completed,
            percentile_cont(ARRAY[0.5, 0.95]) WITHIN GROUP (ORDER BY extract(epoch FROM started_on - created_on) * 1000) AS wait,
            percentile_cont(ARRAY[0.5, 0.95]) WITHIN GROUP (ORDER BY extract(epoch FROM completed_on - started_on) * 1000) AS work
       FROM pgboss.job WHERE name = ANY(?) GROUP BY name ORDER BY name`,
    [[scheduledTaskStartJob.name, scheduledTaskRunJob.name, chatRunJob.name, scheduledTaskFinishJob.name]],
  );
  const { rows: cron } = await db.raw(
    `SELECT extract(epoch FROM created_on - date_trunc('minute', created_on)) AS after FROM pgboss.job WHERE name = ? AND id <> ? ORDER BY created_on`,
    [dispatchScheduledTasksJob.name, dispatchJob],
  );
  const { rows: dispatched } = await db.raw(
    `SELECT extract(epoch FROM started_on - ?::timestamptz) AS picked, extract(epoch FROM completed_on - started_on) AS ran FROM pgboss.job WHERE id = ?`,
    [slot, dispatchJob],
  );
  const { rows: dup } = await db.raw(
    `SELECT count(*)::int AS n FROM (SELECT task_id FROM scheduled_task_runs GROUP BY task_id, scheduled_for HAVING count(*) > 1) d`,
  );
  const discrepancies = await reconcileCredits(db);
  const { rows: open } = await db.raw(`SELECT count(*)::int AS n FROM credit_holds WHERE captured + released < amount`);
  await stopAll(workers);
  const oursDb = await counter.report(TASKS);

  const raw2 = await raw(2);
  console.log(
    `raw pg-boss, round 2: ${fmt.rate(raw2.rate, ' jobs/s')}; pick-up after first send ${distribution(raw2.pickup)}; ${cpuLine(raw2.cpu, 'job')} (load ${load()})`,
  );
  const rawRate = (raw1.rate + raw2.rate) / 2;
  console.log(`raw pg-boss, database per job: ${raw2.database}`);

  console.log(
    `\nours: ${TASKS} runs, ${[...states].map(([s, n]) => `${n} ${s}`).join(', ')}; ${dup[0].n} duplicate runs; ${open[0].n} holds open; ledger ${discrepancies.length ? `${discrepancies.length} DISCREPANCIES` : 'reconciles exactly'}`,
  );
  console.log(
    `  run created behind the slot (dispatch):  ${distribution(rows.map((r) => Number(r.created_ms)))} (the dispatcher job picked up ${Number(dispatched[0]?.picked).toFixed(1)} s after the slot, ran ${Number(dispatched[0]?.ran).toFixed(1)} s)`,
  );
  console.log(
    `  run started behind the slot (lateness):  ${distribution(startLate)}   goal p95 ≤ 30 s: ${percentile(ascending(startLate), 95) <= 30_000 ? 'met' : 'NOT met'}`,
  );
  console.log(
    `  chat turn began behind the slot:         ${distribution(turnLate)} (its job picked up; the run's start opened its conversation and queued it)`,
  );
  console.log(`  run finished behind the slot:            ${distribution(endLate)}`);
  console.log(`  throughput: ${fmt.rate(oursRate, ' runs/s')} (slot → last run finished ${fmt.s(lastEnd)}; load ${loadOurs}); ${cpuLine(oursCpu, 'run')}`);
  console.log(`  database per run: ${oursDb}`);
  if (statements.length) console.log(`  SQL per run (pg_stat_statements):\n    ${statements.join('\n    ')}`);
  for (const q of perQueue as { name: string; n: number; not_completed: number; wait: number[]; work: number[] }[])
    console.log(
      `  ${q.name.padEnd(30)} ${String(q.n).padStart(6)} jobs${q.not_completed ? ` (${q.not_completed} not completed)` : ''}: wait p50 ${fmt.ms(q.wait[0]!)} p95 ${fmt.ms(q.wait[1]!)}, run p50 ${fmt.ms(q.work[0]!)} p95 ${fmt.ms(q.work[1]!)}`,
    );
  if (cron.length)
    console.log(
      `  pg-boss's cron sent the dispatcher ${(cron as { after: string }[]).map((c) => `${Number(c.after).toFixed(1)} s`).join(', ')} after the minute`,
    );
  console.log(
    `baseline raw pg-boss send + work, ${TASKS} jobs, ${WORKERS} processes × ${CONCURRENCY}: ${fmt.rate(raw1.rate, '')} / ${fmt.rate(raw2.rate, '')} jobs/s (before / after)`,
  );
  console.log(`ratio: ${fmt.x(oursRate / rawRate)} raw pg-boss (runs/s over raw jobs/s; a run is 3 jobs: ${fmt.x((3 * oursRate) / rawRate)} in jobs)`);
  console.log(
    `\nsummary: ${new Date().toISOString().slice(0, 10)}, load ${loadOurs}, ${TASKS} tasks, ${WORKERS}×${CONCURRENCY}: lateness start ${distribution(startLate)}; turn began ${distribution(turnLate)}; end ${distribution(endLate)}; ` +
      `${fmt.rate(oursRate, ' runs/s')} vs raw ${fmt.rate(rawRate, ' jobs/s')} = ${fmt.x(oursRate / rawRate)}`,
  );
} finally {
  await stopAll(children);
  await sender.stop({ graceful: false, close: true });
  await db.destroy();
  await database.dispose();
}
