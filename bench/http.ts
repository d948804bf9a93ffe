/**
 * Requests/s and latency of our request path against the bare-framework baseline, on loopback:
 *  (a) a bare Koa 3 app reading one asset row by id (`SELECT * FROM assets WHERE id = $1`, a
 *      parameterized query through pg.Pool: the ceiling for a by-id read in Koa + Postgres; the
 *      issue's baseline), and (a') the same app doing `SELECT 1` (the figure recorded before), and
 *  (b) our real app: GET /organizations/{id} with a valid token (request id, access log, version,
 *      auth + JIT user cache, Postgres rate limit leasing quota in batches, one membership +
 *      organization query), once with 50 callers (one per connection) and once with a single
 *      caller (one hot rate-limit row). It runs with NODE_ENV=production, as deployed: responses
 *      are not validated against their schemas (tests and development do validate them), and
 *  (c) the bare Koa app doing just the queries of (b) (no auth, no routing), and
 *  (d) our real app: GET /assets/{id}, an authorized read of one resource (row, membership and
 *      role decided in one SQL round trip).
 * Each scenario also prints the web server's own CPU time per request (main thread), a cost that
 * does not swing with the machine's load the way req/s does.
 * Each scenario also prints the server's own CPU time per request (the main thread, where every
 * server of this script runs; the load comes from a worker thread): a cost that swings far less
 * with the machine's load than req/s does.
 * Every figure after (a) is also a ratio of (a): the median over rounds of the ratio to the (a) run
 * moments before it (BENCH_ROUNDS, default 5; BENCH_SECONDS per run, default 3).
 * The load generator runs in a worker thread with an undici Pool of 50 connections.
 * Where the time goes: every query any server of this script sends goes through pg's Client.query
 * (knex's included), which is counted and timed per scenario: round trips per request and the mean
 * time from sending a query to its answer being handled, as the server saw it.
 * BENCH_PG_STATEMENTS=1 (no DATABASE_URL): an embedded server with pg_stat_statements, and Postgres's own
 * count and execution time of the statements per request in each scenario's last run.
 * Run: npm run bench:http   (embedded PostgreSQL, throw-away database; ~2 min: 5 rounds × 6 scenarios × 3 s)
 */
import Koa from 'koa';
import type { AddressInfo } from 'node:net';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import pg from 'pg';
import { actorFor } from '../src/access/index.ts';
import { Pool } from 'undici';
import { readFlags } from './support/bench.ts';

// --name=value flags as BENCH_NAME; `--help` prints the comment above.
readFlags();

const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);

interface Load {
  url: string;
  path: string;
  tokens: string[];
}
interface Result {
  requests: number;
  errors: number;
  statuses: Record<number, number>;
  p50: number;
  p99: number;
  seconds: number;
}

/** Worker side: CONNECTIONS loops, each one request at a time on its own connection. */
async function generateLoad({ url, path, tokens }: Load): Promise<Result> {
  const pool = new Pool(url, { connections: CONNECTIONS, pipelining: 1 });
  const latencies: number[] = [];
  const statuses: Record<number, number> = {};
  let errors = 0;
  const started = performance.now();
  const deadline = started + SECONDS * 1000;
  await Promise.all(
    Array.from({ length: CONNECTIONS }, async (_, i) => {
      const headers = tokens.length ? { authorization: `Bearer ${tokens[i % tokens.length]}` } : {};
      while (performance.now() < deadline) {
        const t = performance.now();
        try {
          const res = await pool.request({ method: 'GET', path, headers });
          await res.body.dump();
          statuses[res.statusCode] = (statuses[res.statusCode] ?? 0) + 1;
          latencies.push(performance.now() - t);
        } catch {
          errors++;
        }
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  await pool.close();
  latencies.sort((a, b) => a - b);
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? NaN;
  return { requests: latencies.length, errors, statuses, p50: at(0.5), p99: at(0.99), seconds };
}

function runLoad(load: Load): Promise<Result> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(new URL(import.meta.url), { workerData: load });
    worker.once('message', resolve);
    worker.once('error', reject);
  });
}

/** BENCH_PROFILE=file.cpuprofile: a CPU profile of the web process during run (b), for DevTools. */
async function startProfile() {
  const { Session } = await import('node:inspector/promises');
  const { writeFile } = await import('node:fs/promises');
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.start');
  return {
    async stop(file: string) {
      const { profile } = await session.post('Profiler.stop');
      await writeFile(file, JSON.stringify(profile));
      session.disconnect();
    },
  };
}

/** Round trips of the servers (main thread) during the current run: every pg query, knex's included. */
const queries = { calls: 0, ms: 0 };
function countQueries(): void {
  type Query = (this: pg.Client, ...args: unknown[]) => unknown;
  const original = pg.Client.prototype.query as unknown as Query;
  (pg.Client.prototype as unknown as { query: Query }).query = function (this: pg.Client, ...args: unknown[]) {
    queries.calls++;
    const started = performance.now();
    const done = () => {
      queries.ms += performance.now() - started;
    };
    const callback = typeof args.at(-1) === 'function' ? (args.pop() as (...results: unknown[]) => void) : undefined;
    if (callback)
      return original.call(this, ...args, (...results: unknown[]) => {
        done();
        callback(...results);
      });
    const result = original.apply(this, args);
    if (result instanceof Promise) result.then(done, done);
    return result;
  };
}

const median = (values: number[]) => {
  const sorted = [...values].sort((x, y) => x - y);
  return sorted[Math.floor((sorted.length - 1) / 2)]!;
};

interface Scenario {
  label: string;
  load: Load;
}

/**
 * The machine's speed swings several-fold from minute to minute, so one long run per scenario
 * compares a fast minute with a slow one. Instead the scenarios take turns in ROUNDS short runs:
 * each ratio is taken against the baseline run moments before it, and the medians are printed.
 */
/** BENCH_PG_STATEMENTS=1: Postgres's own account (pg_stat_statements) of each scenario's last run, per request. */
type StatementsProbe = { reset(): Promise<void>; report(requests: number): Promise<string[]> };

async function measure(all: Scenario[], rounds: number, statements?: StatementsProbe): Promise<void> {
  // BENCH_ONLY=a,b keeps the scenarios whose label starts with those letters (e.g. to profile one).
  const only = process.env.BENCH_ONLY?.split(',');
  const scenarios = only ? all.filter((scenario) => only.some((letter) => scenario.label.startsWith(`(${letter})`))) : all;
  const rates = scenarios.map(() => [] as number[]);
  const ratios = scenarios.map(() => [] as number[]);
  const p99s = scenarios.map(() => [] as number[]);
  const statuses = scenarios.map(() => ({}) as Record<number, number>);
  const cpu = scenarios.map(() => [] as number[]);
  const calls = scenarios.map(() => [] as number[]);
  const queryMs = scenarios.map(() => [] as number[]);
  const serverSide = scenarios.map(() => [] as string[]);
  for (let round = 0; round < rounds; round++) {
    let baseline = 0;
    for (const [i, scenario] of scenarios.entries()) {
      // Every server of this script runs on the main thread (the load comes from a worker thread),
      // so the main thread's CPU time per request is the server's own cost, whatever else the
      // machine is doing: steadier than req/s on a shared machine.
      const before = process.threadCpuUsage();
      if (statements && round === rounds - 1) await statements.reset();
      queries.calls = 0;
      queries.ms = 0;
      const result = await runLoad(scenario.load);
      if (statements && round === rounds - 1) serverSide[i] = await statements.report(result.requests);
      const used = process.threadCpuUsage(before);
      calls[i]!.push(queries.calls / Math.max(1, result.requests));
      queryMs[i]!.push(queries.ms / Math.max(1, queries.calls));
      cpu[i]!.push((used.user + used.system) / Math.max(1, result.requests));
      const rate = result.requests / result.seconds;
      if (i === 0) baseline = rate;
      rates[i]!.push(rate);
      ratios[i]!.push(rate / baseline);
      p99s[i]!.push(result.p99);
      for (const [status, count] of Object.entries(result.statuses)) statuses[i]![Number(status)] = (statuses[i]![Number(status)] ?? 0) + count;
    }
  }
  for (const [i, scenario] of scenarios.entries()) {
    const ratio =
      i === 0 ? 'baseline' : `${median(ratios[i]!).toFixed(2)}× baseline (rounds ${Math.min(...ratios[i]!).toFixed(2)}–${Math.max(...ratios[i]!).toFixed(2)})`;
    const cost = `${median(cpu[i]!).toFixed(0).padStart(4)} µs CPU/request${i === 0 ? '' : ` (${(median(cpu[i]!) / median(cpu[0]!)).toFixed(1)}× baseline)`}`;
    const roundTrips = `${median(calls[i]!).toFixed(3)} queries/request, ${median(queryMs[i]!).toFixed(2)} ms each`;
    console.log(
      `${scenario.label.padEnd(46)} ${median(rates[i]!).toFixed(0).padStart(7)} req/s   p99 ${median(p99s[i]!).toFixed(1).padStart(6)} ms   ${ratio}   ${cost}   ${roundTrips}   statuses ${JSON.stringify(statuses[i])}`,
    );
    for (const line of serverSide[i]!) console.log(`      ${line}`);
  }
}

if (!isMainThread) {
  parentPort!.postMessage(await generateLoad(workerData as Load));
} else {
  const { signToken } = await import('../src/auth/sign.ts');
  const { createDb } = await import('../src/db/knex.ts');
  const { connectionBudget } = await import('../src/db/budget.ts');
  const { createLogger } = await import('../src/platform/logger.ts');
  const { startWeb } = await import('../src/web.ts');
  const { TEST_JWT_SECRET, testConfig } = await import('../test/support/config.ts');
  const { benchDatabase, resetStatements, topStatements } = await import('./support/database.ts');

  const database = await benchDatabase(process.env.BENCH_PG_STATEMENTS === '1');
  const db = createDb(database.url, { max: 2 });
  const org = 'bench-org';
  const users = Array.from({ length: CONNECTIONS }, (_, i) => `bench-user-${i}`);
  await db.raw(`INSERT INTO users (id, email, name) SELECT u, u || '@bench.test', u FROM unnest(?::text[]) u`, [users]);
  await db.raw(`INSERT INTO organizations (id, name, slug, created_by_id) VALUES (?, 'Bench', 'bench', ?)`, [org, users[0]!]);
  await db.raw(`INSERT INTO organization_members (organization_id, user_id, role) SELECT ?, u, 'member' FROM unnest(?::text[]) u`, [org, users]);
  const tokens = users.map((sub) => signToken(TEST_JWT_SECRET, { sub, email: `${sub}@bench.test`, name: sub, ttlSeconds: 3600 }));
  // (d) One asset every member reads through general access: the authorized one-round-trip read.
  const [asset] = await db('assets')
    .insert({
      organization_id: org,
      created_by_id: users[0]!,
      type: 'text',
      title: 'Bench',
      content: 'x',
      visibility: 'workspace',
      enrichment_state: 'ignored',
    })
    .returning('id');

  // (a) The baseline: the same pool size our web process uses.
  // BENCH_POOL: the web's DB_POOL_MAX (default: the web's default, src/db/budget.ts); the bare apps use the same size.
  const config = testConfig({
    NODE_ENV: 'production',
    RATE_LIMIT_PER_MINUTE: '100000000',
    LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'silent',
    ...(process.env.BENCH_POOL && { DB_POOL_MAX: process.env.BENCH_POOL }),
  });
  const poolSize = connectionBudget(config, 'web').knex;
  const pool = new pg.Pool({ connectionString: database.url, max: poolSize });
  const bare = new Koa();
  bare.use(async (ctx) => {
    if (ctx.path === '/one') {
      const { rows } = await pool.query('SELECT 1 AS one');
      ctx.body = rows[0];
      return;
    }
    const { rows } = await pool.query('SELECT * FROM assets WHERE id = $1', [asset.id]);
    ctx.body = rows[0];
  });
  const bareServer = bare.listen(0, '127.0.0.1');
  await new Promise((resolve) => bareServer.once('listening', resolve));
  const bareUrl = `http://127.0.0.1:${(bareServer.address() as AddressInfo).port}`;

  // (c) The same Koa, doing exactly the queries of (b) on a knex pool: rate-limit lease (one upsert
  // per batch of requests), membership + organization in one prepared query. Tells the cost of
  // the round trips apart from our middleware.
  const knexDb = createDb(database.url, { max: poolSize });
  const { rateLimit } = await import('../src/http/middleware/rate-limit.ts');
  const { getOrganization } = await import('../src/organizations/service.ts');
  const countRequest = rateLimit(knexDb, 100_000_000);
  let next = 0;
  const queries = new Koa();
  queries.use(async (ctx) => {
    const userId = users[next++ % users.length]!;
    ctx.state.caller = { userId, email: null, name: null };
    await countRequest(ctx, async () => {
      ctx.body = await getOrganization(actorFor(knexDb, ctx.state.caller), org);
    });
  });
  const queriesServer = queries.listen(0, '127.0.0.1');
  await new Promise((resolve) => queriesServer.once('listening', resolve));
  const queriesUrl = `http://127.0.0.1:${(queriesServer.address() as AddressInfo).port}`;

  // (b) Our web process, as deployed (production: no response validation) but on loopback; a quota no run can use up.
  const web = await startWeb(config, database.url, createLogger(config, 'bench'));
  const webUrl = `http://127.0.0.1:${(web.server.address() as AddressInfo).port}`;

  try {
    const rounds = Number(process.env.BENCH_ROUNDS ?? 5);
    console.log(
      `${CONNECTIONS} connections, ${rounds} rounds of ${SECONDS} s per scenario, loopback; our app with NODE_ENV=${config.NODE_ENV}, DB_POOL_MAX=${poolSize}; medians\n`,
    );
    countQueries();
    const profile = process.env.BENCH_PROFILE ? await startProfile() : undefined;
    await measure(
      [
        { label: '(a) bare Koa 3 + pg by-id SELECT (pg.Pool)', load: { url: bareUrl, path: '/', tokens: [] } },
        { label: "(a') bare Koa 3 + SELECT 1 (pg.Pool)", load: { url: bareUrl, path: '/one', tokens: [] } },
        { label: '(c) bare Koa 3 + the queries of (b)', load: { url: queriesUrl, path: '/', tokens: [] } },
        { label: `(b) GET /organizations/{id}, ${CONNECTIONS} callers`, load: { url: webUrl, path: `/organizations/${org}`, tokens } },
        { label: `(d) GET /assets/{id}, ${CONNECTIONS} callers`, load: { url: webUrl, path: `/assets/${asset.id}`, tokens } },
        { label: '(b) GET /organizations/{id}, 1 caller', load: { url: webUrl, path: `/organizations/${org}`, tokens: [tokens[0]!] } },
        { label: '    GET /healthz (middleware, no auth, no DB)', load: { url: webUrl, path: '/healthz', tokens: [] } },
      ],
      rounds,
      database.statements ? { reset: () => resetStatements(db), report: (requests) => topStatements(db, requests, 3) } : undefined,
    );
    if (profile) await profile.stop(process.env.BENCH_PROFILE!);
  } finally {
    await web.stop();
    await new Promise((resolve) => bareServer.close(resolve));
    await new Promise((resolve) => queriesServer.close(resolve));
    await knexDb.destroy();
    await pool.end();
    await db.destroy();
    await database.dispose();
  }
}
