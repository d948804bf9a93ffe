/**
 * The credits hot path against its floor, all in one run on one database (issues 9 and 21):
 *   floor         a bare single-row `UPDATE … SET n = n + 1` (autocommit): the most any ledger that
 *                 serialises an organization on one row can do;
 *   hold+capture  placeHold, then captureHold (src/credits/holds.ts): one statement each, here
 *                 autocommitted (a metered call places its hold so too, and captures in its settle
 *                 transaction); a hold writes the balance, the hold and one ledger row, a capture the
 *                 hold, a capture row, the balance, the grants it spends and its ledger rows;
 *   metered read  POST /social/net2_profile end to end through the sandbox provider: HTTP, the
 *                 accept statement (hold, call, job), a worker process, the job's ending transaction
 *                 (the call settled, its capture pending on the hold), the capture posted by its
 *                 own statement with the NOTIFY that carries the answer back to the waiting
 *                 request. The web server runs in this process (with the load), the worker in its
 *                 own, as deployed. Printed after the run: each read's wait for a worker
 *                 (accepted → started) and its run (started → settled).
 *   chat run      POST …/credits/chat-runs/begin then …/capture over HTTP (membership, the hold and
 *                 the alert policy; the capture, which finds the run's hold itself), BENCH_CHAT_CONCURRENCY
 *                 (16) in flight, against the floor at the same concurrency.
 *   bounds        what the HTTP paths cannot beat whatever the ledger does, in the same run: a bare Koa app
 *                 answering `SELECT 1` (bench/support/bare-koa.ts) at the chat run's concurrency — a chat
 *                 run is two requests; and a raw pg-boss round trip at 50 clients — send a job, a raw worker
 *                 process (bench/support/raw-worker.ts, no per-group limit, a no-op handler that ends with
 *                 a NOTIFY, as a read's settle does) completes it, the sender hears the NOTIFY — a metered
 *                 read is one such round trip plus its HTTP request and its credits.
 * Each on one hot organization (one row) and spread over 100, at BENCH_CONCURRENCY clients (50).
 * Every rate is also printed as a ratio to the floor of its own rows and concurrency (issue 21's table),
 * and the HTTP paths' also to their bound.
 * --pg-statements=1: an embedded server with pg_stat_statements (track=all); after the timed rounds
 * each scenario runs once more alone and prints its round trips (top-level statements), every
 * statement including those inside the credit functions, and the SQL the time went to, per operation.
 * The machine's speed swings from minute to minute, so the scenarios take turns in BENCH_ROUNDS
 * short runs (BENCH_SECONDS each) and every ratio is the median of per-round ratios.
 * Run: npm run bench:credits   (embedded PostgreSQL, throw-away database; ~2 min)
 */
import pg from 'pg';
import { signToken } from '../src/auth/sign.ts';
import { createCreditPeriods } from '../src/app/credit-periods.ts';
import { placeHold } from '../src/credits/holds.ts';
import { captureHold } from '../src/credits/hold-resolutions.ts';
import { grantCredits } from '../src/credits/ledger.ts';
import { reconcileCredits } from '../src/credits/reconcile.ts';
import { createDb } from '../src/db/knex.ts';
import { createBoss } from '../src/jobs/boss.ts';
import { createLogger } from '../src/platform/logger.ts';
import { startWeb } from '../src/web.ts';
import { TEST_JWT_SECRET, testConfig } from '../test/support/config.ts';
import { nodeWithTsx, run } from '../test/support/processes.ts';
import { startBareKoa } from './support/bare-koa.ts';
import { int, readFlags } from './support/bench.ts';
import { benchDatabase, resetStatements, topStatements } from './support/database.ts';

readFlags();
const CONCURRENCY = int('CONCURRENCY', 50);
const CHAT_CONCURRENCY = int('CHAT_CONCURRENCY', 16);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 4);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const PROFILE_SECONDS = Number(process.env.BENCH_PROFILE_SECONDS ?? 3);
const SPREAD = 100;

const database = await benchDatabase(int('PG_STATEMENTS', 0) === 1);
const db = createDb(database.url, { max: CONCURRENCY + 2 });
const periods = createCreditPeriods();
const overrides = {
  NODE_ENV: 'production',
  RATE_LIMIT_PER_MINUTE: '100000000',
  WORKER_CONCURRENCY: '64',
  WORKER_POLL_INTERVAL_SECONDS: '2',
  LOG_LEVEL: 'warn',
  STARTER_CREDITS: '0',
};
const config = testConfig(overrides);
const web = await startWeb(config, database.url, createLogger(config, 'bench-web'));
// The worker is its own process, as deployed (Procfile): it must not share this process's event loop with the web server and the load.
const worker = run(...nodeWithTsx('workers/main.ts'), {
  DATABASE_URL: database.url,
  JWT_SECRET: TEST_JWT_SECRET,
  NODE_ENV: 'production',
  LOG_LEVEL: 'warn',
  WORKER_CONCURRENCY: '32',
  WORKER_POLL_INTERVAL_SECONDS: '2',
});
// Ready once its pool is connected (warm-up below waits for its first jobs anyway).
for (let tries = 0; ; tries++) {
  const { rows } = await db.raw(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'workspace-worker-boss'`);
  if (rows[0].n > 0) break;
  if (tries > 300 || worker.child.exitCode !== null)
    throw new Error(
      `the worker did not start (tries ${tries}, exit ${worker.child.exitCode}): ${worker.stdout().slice(-2000)} ${worker.stderr().slice(-2000)}`,
    );
  await new Promise((resolve) => setTimeout(resolve, 100));
}
// The bounds: a bare Koa app, and raw pg-boss round trips through a raw worker process of the same size as ours.
const bare = await startBareKoa(database.url);
const RAW_QUEUE = 'bench-raw-round-trip';
const RAW_DONE = 'bench_raw_done';
const sender = createBoss(database.url, 'web');
sender.on('error', (error) => console.error('raw pg-boss sender', error));
await sender.start();
await sender.createQueue(RAW_QUEUE, { policy: 'standard', notify: true, retryLimit: 2, retryDelay: 2, expireInSeconds: 1800, heartbeatSeconds: 20 });
const rawWorker = run(...nodeWithTsx('bench/support/raw-worker.ts'), {
  DATABASE_URL: database.url,
  RAW_QUEUE,
  RAW_NOTIFY: RAW_DONE,
  WORKER_CONCURRENCY: '32',
  JOB_ORGANIZATION_CONCURRENCY: '0',
  WORKER_POLL_INTERVAL_SECONDS: '2',
});
await rawWorker.waitForOutput(/ready/);
const rawDone = new Map<string, () => void>();
const rawEarly = new Set<string>();
const listener = new pg.Client({ connectionString: database.url });
await listener.connect();
listener.on('notification', ({ payload }) => {
  const done = rawDone.get(payload!);
  if (!done) return void rawEarly.add(payload!);
  rawDone.delete(payload!);
  done();
});
await listener.query(`LISTEN ${RAW_DONE}`);
const address = web.server.address();
const base = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;

async function seed(prefix: string, count: number): Promise<{ organizations: string[]; tokens: string[] }> {
  const organizations = Array.from({ length: count }, (_, i) => `${prefix}-${i}`);
  const users = Array.from({ length: CONCURRENCY }, (_, i) => `${prefix}-user-${i}`);
  await db.raw(`INSERT INTO users (id, email, name) SELECT u, u || '@bench.test', u FROM unnest(?::text[]) u`, [users]);
  await db.raw(`INSERT INTO organizations (id, name, slug, created_by_id) SELECT o, o, o, ? FROM unnest(?::text[]) o`, [users[0]!, organizations]);
  await db.raw(
    `INSERT INTO organization_members (organization_id, user_id, role) SELECT o, u, 'member' FROM unnest(?::text[]) o CROSS JOIN unnest(?::text[]) u`,
    [organizations, users],
  );
  for (const id of organizations) {
    await db.transaction((trx) => grantCredits(trx, { organizationId: id, source: 'purchase', amount: 1_000_000_000, description: 'Bench credits' }));
  }
  const tokens = users.map((sub) => signToken(TEST_JWT_SECRET, { sub, email: `${sub}@bench.test`, name: sub, ttlSeconds: 3600 }));
  return { organizations, tokens };
}

interface Result {
  ops: number;
  seconds: number;
  latencies: number[];
  errors: number;
}

/** `clients` loops doing `op(i)` until the deadline. */
async function load(op: (client: number, n: number) => Promise<void>, clients = CONCURRENCY, seconds = SECONDS): Promise<Result> {
  const latencies: number[] = [];
  let errors = 0;
  let n = 0;
  const deadline = Date.now() + seconds * 1000;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: clients }, async (_, client) => {
      while (Date.now() < deadline) {
        const t = performance.now();
        try {
          await op(client, n++);
          latencies.push(performance.now() - t);
        } catch (error) {
          if (errors++ < 3) console.error(error);
        }
      }
    }),
  );
  return { ops: latencies.length, seconds: (performance.now() - started) / 1000, latencies, errors };
}

const hot = await seed('hot', 1);
const spread = await seed('spread', SPREAD);
await db.raw('CREATE TABLE bench_counters (id integer PRIMARY KEY, n bigint NOT NULL DEFAULT 0)');
await db.raw(`INSERT INTO bench_counters (id) SELECT g FROM generate_series(0, ${SPREAD - 1}) g`);
await db.raw('ANALYZE');

const floor = (rows: number) => (_: number, n: number) => db.raw('UPDATE bench_counters SET n = n + 1 WHERE id = ?', [n % rows]).then(() => undefined);
const holdCapture = (organizations: string[]) => async (client: number, n: number) => {
  const organizationId = organizations[n % organizations.length]!;
  const userId = `${organizations === hot.organizations ? 'hot' : 'spread'}-user-${client}`;
  // Each one statement, autocommitted (a caller with work of its own runs them in its transaction).
  const hold = await placeHold(db, periods, { organizationId, userId, amount: 10, reason: 'bench' });
  await captureHold(db, hold, 7);
};
const meteredRead = (seeded: typeof hot) => async (client: number, n: number) => {
  const res = await fetch(`${base}/social/net2_profile`, {
    method: 'POST',
    headers: { authorization: `Bearer ${seeded.tokens[client]}`, 'content-type': 'application/json' },
    body: JSON.stringify({ organization_id: seeded.organizations[n % seeded.organizations.length], input: { username: `user${n % 1000}` } }),
  });
  await res.arrayBuffer();
  if (res.status !== 200) throw new Error(`POST /social/net2_profile answered ${res.status}`);
};
/** A chat run's credits over HTTP as the chat client drives them: begin (the hold), then one capture of what the step used. */
const chatRun = (seeded: typeof hot) => async (client: number, n: number) => {
  const organizationId = seeded.organizations[n % seeded.organizations.length]!;
  const runId = `run-${client}-${n}-${Math.random().toString(36).slice(2)}`;
  const post = async (what: string, body: unknown, status: number) => {
    const res = await fetch(`${base}/organizations/${organizationId}/credits/chat-runs/${what}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${seeded.tokens[client]}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    await res.arrayBuffer();
    if (res.status !== status) throw new Error(`POST …/chat-runs/${what} answered ${res.status}`);
  };
  await post('begin', { run_id: runId, amount: 10 }, 201);
  await post('capture', { run_id: runId, amount: 7, capture_id: 'step-1' }, 200);
};

const bareRequest = async () => {
  const res = await fetch(bare.url);
  await res.arrayBuffer();
  if (res.status !== 200) throw new Error(`bare Koa answered ${res.status}`);
};
/** Send a job (grouped by organization as ours are) and wait for the raw worker's NOTIFY that it is done. */
const rawRoundTrip = (groups: number) => async (_: number, n: number) => {
  const id = (await sender.send(RAW_QUEUE, {}, { group: { id: `group-${n % groups}` } }))!;
  if (rawEarly.delete(id)) return;
  await new Promise<void>((resolve) => rawDone.set(id, resolve));
};

interface Scenario {
  key: string;
  label: string;
  op: (client: number, n: number) => Promise<void>;
  /** The floor its rate is compared with (same rows, same concurrency). */
  floor?: string;
  /** What bounds it whatever the ledger does: that scenario's rate divided by `per` (operations of it per operation of this). */
  bound?: { key: string; per: number };
  clients?: number;
}
const scenarios: Scenario[] = [
  { key: 'floor-1', label: 'floor: bare single-row UPDATE, 1 row', op: floor(1) },
  { key: 'hc-1', label: 'hold+capture, 1 organization', op: holdCapture(hot.organizations), floor: 'floor-1' },
  { key: 'raw-1', label: 'bound: raw pg-boss round trip + NOTIFY, 1 group', op: rawRoundTrip(1), floor: 'floor-1' },
  { key: 'read-1', label: 'metered read (HTTP → worker), 1 organization', op: meteredRead(hot), floor: 'floor-1', bound: { key: 'raw-1', per: 1 } },
  { key: 'floor-1-c', label: `floor: bare single-row UPDATE, 1 row, ${CHAT_CONCURRENCY} clients`, op: floor(1), clients: CHAT_CONCURRENCY },
  { key: 'bare-c', label: `bound: bare Koa + SELECT 1, ${CHAT_CONCURRENCY} clients`, op: bareRequest, floor: 'floor-1-c', clients: CHAT_CONCURRENCY },
  {
    key: 'chat-1',
    label: `chat run begin+capture (HTTP), 1 org, ${CHAT_CONCURRENCY} clients`,
    op: chatRun(hot),
    floor: 'floor-1-c',
    bound: { key: 'bare-c', per: 2 },
    clients: CHAT_CONCURRENCY,
  },
  { key: 'floor-100', label: `floor: bare single-row UPDATE, ${SPREAD} rows`, op: floor(SPREAD) },
  { key: 'hc-100', label: `hold+capture, ${SPREAD} organizations`, op: holdCapture(spread.organizations), floor: 'floor-100' },
  { key: 'raw-100', label: `bound: raw pg-boss round trip + NOTIFY, ${SPREAD} groups`, op: rawRoundTrip(SPREAD), floor: 'floor-100' },
  {
    key: 'read-100',
    label: `metered read (HTTP → worker), ${SPREAD} organizations`,
    op: meteredRead(spread),
    floor: 'floor-100',
    bound: { key: 'raw-100', per: 1 },
  },
];
const only = process.env.BENCH_ONLY?.split(',');
const chosen = only ? scenarios.filter((s) => only.includes(s.key)) : scenarios;

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor((values.length - 1) / 2)]!;
const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
const rates = new Map<string, number[]>();
const p50s = new Map<string, number[]>();
const p95s = new Map<string, number[]>();
const p975s = new Map<string, number[]>();
let errors = 0;

try {
  console.log(`${CONCURRENCY} concurrent clients, ${ROUNDS} rounds of ${SECONDS} s per scenario`);
  // Warm-up: plans, pools, the worker's first fetches.
  for (const s of chosen) await Promise.all(Array.from({ length: Math.min(4, CONCURRENCY) }, (_, i) => s.op(i, i)));
  for (let round = 0; round < ROUNDS; round++) {
    for (const s of chosen) {
      const result = await load(s.op, s.clients);
      const sorted = result.latencies.sort((a, b) => a - b);
      errors += result.errors;
      for (const [map, value] of [
        [rates, result.ops / result.seconds],
        [p50s, pct(sorted, 50)],
        [p95s, pct(sorted, 95)],
        [p975s, pct(sorted, 97.5)],
      ] as const)
        map.set(s.key, [...(map.get(s.key) ?? []), value]);
    }
  }
  /** a's rate over b's (b's divided by `per`), median of the rounds' ratios. */
  const ratio = (a: string, b: string, per = 1) => {
    const ra = rates.get(a);
    const rb = rates.get(b);
    if (!ra || !rb) return '';
    const each = ra.map((value, i) => (value * per) / rb[i]!);
    const name = per === 1 ? b : `${b}/${per}`;
    return `${median(each).toPrecision(2)}× ${name} (rounds ${Math.min(...each).toPrecision(2)}–${Math.max(...each).toPrecision(2)})`;
  };
  for (const s of chosen) {
    const vs = [
      s.floor && ratio(s.key, s.floor),
      s.bound && ratio(s.key, s.bound.key, s.bound.per),
      s.key.startsWith('read') && ratio(s.key, s.key.replace('read', 'hc')),
    ]
      .filter(Boolean)
      .join('; ');
    const ms = (map: Map<string, number[]>) => median(map.get(s.key)!).toFixed(1).padStart(6);
    console.log(
      `${s.label.padEnd(58)} ${median(rates.get(s.key)!).toFixed(0).padStart(6)} ops/s   p50 ${ms(p50s)} ms   p95 ${ms(p95s)} ms   p97.5 ${ms(p975s)} ms   ${vs}`,
    );
  }
  console.log(`errors: ${errors}`);
  console.log(
    'goals (issue 21): hold+capture ≥ 0.25× floor (1 org), ≥ 0.5× (100 orgs); chat run ≥ 0.1× floor; metered read ≥ 0.2× floor, p97.5 ≤ 100 ms, p95 ≤ 50 ms (bounds: a goal above its bound’s own ratio to the floor cannot be met by the ledger)',
  );
  if (database.statements) {
    // Each scenario alone, at its concurrency: what one operation costs the database, statement by statement.
    for (const s of chosen.filter((c) => c.floor)) {
      await resetStatements(db);
      const result = await load(s.op, s.clients, PROFILE_SECONDS);
      const { rows } = await db.raw(
        `SELECT coalesce(sum(calls) FILTER (WHERE toplevel), 0) AS top, coalesce(sum(calls), 0) AS calls FROM pg_stat_statements
          WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())`,
      );
      const per = (n: unknown) => (Number(n) / result.ops).toFixed(1);
      console.log(
        `\n${s.label}: ${result.ops} operations; per operation ${per(rows[0].top)} round trips (top-level statements), ${per(rows[0].calls)} statements in all`,
      );
      for (const line of await topStatements(db, result.ops, 14)) console.log(`  ${line}`);
      // Every round trip, by statement (top-level only; a statement's own sub-statements are not round trips).
      const { rows: trips } = await db.raw(
        `SELECT sum(calls) AS calls, regexp_replace(query, '\\s+', ' ', 'g') AS query FROM pg_stat_statements
          WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) AND toplevel
          GROUP BY 2 HAVING sum(calls) >= ? ORDER BY 1 DESC`,
        [result.ops / 20],
      );
      console.log('  round trips by statement:');
      for (const r of trips as { calls: string; query: string }[]) console.log(`  ${per(r.calls).padStart(7)}  ${r.query.slice(0, 130)}`);
    }
  }
  await new Promise((resolve) => setTimeout(resolve, 1000));
  // Where a read's time goes between the web's accept and its settle (the rest is HTTP, the web's wait and the post).
  const { rows: phases } = await db.raw(
    `SELECT CASE WHEN organization_id LIKE 'hot-%' THEN '1 organization' ELSE '${SPREAD} organizations' END AS scope,
            percentile_cont(0.5) WITHIN GROUP (ORDER BY 1000 * extract(epoch FROM started_at - created_at)) AS pickup50,
            percentile_cont(0.95) WITHIN GROUP (ORDER BY 1000 * extract(epoch FROM started_at - created_at)) AS pickup95,
            percentile_cont(0.5) WITHIN GROUP (ORDER BY 1000 * extract(epoch FROM finished_at - started_at)) AS run50,
            percentile_cont(0.95) WITHIN GROUP (ORDER BY 1000 * extract(epoch FROM finished_at - started_at)) AS run95
       FROM metered_calls WHERE status = 'succeeded' GROUP BY 1 ORDER BY 1`,
  );
  const ms = (value: unknown) => `${Number(value).toFixed(1)} ms`;
  for (const phase of phases)
    console.log(
      `metered calls, ${phase.scope}: accepted → started on a worker p50 ${ms(phase.pickup50)}, p95 ${ms(phase.pickup95)}; started → settled p50 ${ms(phase.run50)}, p95 ${ms(phase.run95)}`,
    );
  const open = await db('metered_calls').whereIn('status', ['queued', 'running']).count('* as n').first();
  const discrepancies = await reconcileCredits(db);
  console.log(
    `after the run: ${open?.n} calls still open; reconciliation: ${discrepancies.length === 0 ? 'ledger and balances agree exactly' : JSON.stringify(discrepancies.slice(0, 3))}`,
  );
} finally {
  worker.child.kill('SIGTERM');
  rawWorker.child.kill('SIGTERM');
  await Promise.all([worker.exited, rawWorker.exited]);
  await listener.end();
  await sender.stop({ graceful: false, close: true });
  await bare.stop();
  await web.stop();
  await db.destroy();
  await database.dispose();
}
