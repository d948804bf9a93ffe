/**
 * Generations end to end through the sandbox provider, against raw pg-boss, in one run, taking turns
 * round by round (the machine is shared and its speed swings).
 *
 * - ours: BENCH_CLIENTS clients (16) each POST /generations (an image, sandbox model) to a real web
 *   process and wait until the generation is `succeeded`, BENCH_GENERATIONS (150) per round, run by
 *   BENCH_WORKERS worker processes (4, workers/main.ts, WORKER_CONCURRENCY BENCH_CONCURRENCY = 4).
 * - raw: as many clients send a job with plain pg-boss (`send`, the same group id) and wait until it is
 *   `completed`, worked by as many raw pg-boss worker processes (bench/support/raw-worker.ts: the work
 *   options of workers/main.ts, a no-op handler).
 * Both wait the same way: one poller reads the state of every job/generation in flight every 20 ms.
 * Only one side's processes run during its round (the other's are stopped), each round starts with 10
 * untimed warm-up items. Reported per side: items/s, latency p50/p95, where the time goes (ours: POST,
 * pick-up, the start step, the work and its end, until seen; raw: send, pick-up, run, until seen), CPU
 * per item of each process and of PostgreSQL, and (last round) the database's transactions and row
 * writes per item. Ratio: the median over rounds of ours / raw items/s of the same round. Goal ≥ 0.4×.
 *
 * Before each round's timed part, each side's processes sit idle for 3 s: the CPU they burn with nothing
 * to do (ms per second) is printed too.
 *
 * Flags (or BENCH_*): --generations (150 per round), --rounds (3), --clients (16), --workers (4),
 * --organizations (1; the items spread over that many organizations, raw's over as many group ids),
 * --poll-seconds (WORKER_POLL_INTERVAL_SECONDS of both sides' workers, 2),
 * --concurrency (4), --db-profile (1; 0 skips the 21 s database count), --pg-statements (0; 1: an embedded
 * server with pg_stat_statements, and the SQL that took the time per item in the last round; N > 12: N lines
 * per list), --log-level (warn),
 * --cpu-prof (a directory: the web and worker processes run under `node --cpu-prof` and write their
 * profiles there when they stop (1: a temporary directory, printed); read them with
 * `npx tsx bench/support/cpu-profile-top.ts <dir>`).
 * Run: npm run bench:generations      (~2 min)
 */
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { createDb } from '../src/db/knex.ts';
import { createBoss } from '../src/jobs/boss.ts';
import { generationJob } from '../src/generations/jobs.ts';
import type { ChildRun } from '../test/support/processes.ts';
import { ascending, cpuSeconds, databaseWork, fmt, int, load, loads, median, percentile, postgresCpu, readFlags, text } from './support/bench.ts';
import { benchDatabase, resetStatements, topStatements } from './support/database.ts';
import { benchStack, seedOrganizations } from './support/stack.ts';

readFlags();
const PER_ROUND = Math.max(1, int('GENERATIONS', 150));
const ROUNDS = Math.max(1, int('ROUNDS', 3));
const CLIENTS = Math.max(1, int('CLIENTS', 16));
const WORKERS = Math.max(1, int('WORKERS', 4));
const CONCURRENCY = Math.max(1, int('CONCURRENCY', 4));
const DB_PROFILE = int('DB_PROFILE', 1) > 0;
const STATEMENTS = int('PG_STATEMENTS', 0) > 0;
/** --pg-statements=N above 1: that many statements in each list (12 otherwise). */
const STATEMENT_LINES = Math.max(12, int('PG_STATEMENTS', 0));
const WARM_UP = 10;
const POLL_MS = 20;
const ORGANIZATIONS = Math.max(1, int('ORGANIZATIONS', 1));
const orgs = Array.from({ length: ORGANIZATIONS }, (_, i) => (i === 0 ? 'bench-org' : `bench-org-${i}`));
const orgOf = (n: number) => orgs[n % ORGANIZATIONS]!;
/** Seconds of idle CPU measured before each round (what the processes burn with nothing to do). */
const IDLE_SECONDS = 3;
const RAW_QUEUE = 'bench-raw-noop';

const database = await benchDatabase(STATEMENTS);
const db = createDb(database.url, { max: 8 });
const POLL_SECONDS = text('POLL_SECONDS', '2');
const CPU_PROFILES = ((dir) => (dir === '1' ? path.join(tmpdir(), `bench-generations-cpu-${process.pid}`) : dir))(text('CPU_PROF', ''));
const stack = await benchStack(
  database.url,
  {
    WORKER_CONCURRENCY: String(CONCURRENCY),
    WORKER_POLL_INTERVAL_SECONDS: POLL_SECONDS,
    LOG_LEVEL: text('LOG_LEVEL', 'warn'),
  },
  CPU_PROFILES ? { nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${CPU_PROFILES}`] } : {},
);
const sender = createBoss(database.url, 'web', { max: CLIENTS });
sender.on('error', (error) => console.error('sender pg-boss error', error));
const pgCpu = await postgresCpu(db);

/** One poller for everything in flight: every 20 ms, the ids whose state is final. */
function poller(sql: string, done: (state: string) => boolean) {
  const waiting = new Map<string, { resolve: (at: number) => void; reject: (error: Error) => void }>();
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      if (waiting.size) {
        const { rows } = (await db.raw(sql, [[...waiting.keys()]])) as { rows: { id: string; state: string }[] };
        const at = Date.now();
        for (const row of rows) {
          if (!done(row.state) && !['failed', 'canceled', 'cancelled'].includes(row.state)) continue;
          const entry = waiting.get(row.id)!;
          waiting.delete(row.id);
          if (done(row.state)) entry.resolve(at);
          else entry.reject(new Error(`${row.id} ended ${row.state}`));
        }
      }
      await sleep(POLL_MS);
    }
  })();
  return {
    wait: (id: string) => new Promise<number>((resolve, reject) => waiting.set(id, { resolve, reject })),
    async stop() {
      stopped = true;
      await loop;
    },
  };
}

interface Item {
  id: string;
  sent: number;
  answered: number;
  seen: number;
}

/** `count` items over CLIENTS loops. */
async function drive(count: number, item: (i: number) => Promise<Item>): Promise<{ items: Item[]; seconds: number }> {
  const items: Item[] = [];
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      while (next < count) items.push(await item(next++));
    }),
  );
  return { items, seconds: (performance.now() - started) / 1000 };
}

interface Round {
  statements?: string[];
  /** CPU ms per second with nothing to do. */
  idle: Record<string, number>;
  rate: number;
  latency: number[];
  parts: Record<string, number>;
  cpu: Record<string, number>;
  database?: string;
}

/**
 * Runs `count` items while measuring CPU of `pids` (and PostgreSQL, and this process) per item, then
 * `stop`s the processes — inside the database count (a stopped process's statistics are flushed, and
 * its idle polling while the count waits for the others' is not counted).
 */
async function measured(
  pids: Record<string, number[]>,
  count: number,
  item: (i: number) => Promise<Item>,
  stop: () => Promise<void>,
  profile: boolean,
): Promise<{ items: Item[]; seconds: number; cpu: Record<string, number>; database?: string; statements?: string[] }> {
  const run = async () => {
    if (profile && database.statements) await resetStatements(db);
    const before = Object.fromEntries(Object.entries(pids).map(([k, list]) => [k, list.map(cpuSeconds)]));
    const pg = pgCpu();
    const self = process.cpuUsage();
    const result = await drive(count, item);
    const cpu: Record<string, number> = {};
    for (const [k, list] of Object.entries(pids)) cpu[k] = (list.reduce((sum, pid, i) => sum + cpuSeconds(pid) - before[k]![i]!, 0) * 1000) / count;
    cpu.PostgreSQL = ((pgCpu() - pg) * 1000) / count;
    const used = process.cpuUsage(self);
    cpu['bench (clients)'] = (used.user + used.system) / 1000 / count;
    const statements = profile && database.statements ? await topStatements(db, count, STATEMENT_LINES) : undefined;
    await stop();
    return { ...result, cpu, ...(statements && { statements }) };
  };
  const { value, report } = profile ? await databaseWork(db, count, run) : { value: await run(), report: undefined };
  return { ...value, ...(report && { database: report }) };
}

/** CPU ms per second that `pids` and PostgreSQL use with nothing to do, over IDLE_SECONDS. */
async function idleCpu(pids: Record<string, number[]>): Promise<Record<string, number>> {
  const before = Object.fromEntries(Object.entries(pids).map(([k, list]) => [k, list.map(cpuSeconds)]));
  const pg = pgCpu();
  await sleep(IDLE_SECONDS * 1000);
  const idle: Record<string, number> = {};
  for (const [k, list] of Object.entries(pids)) idle[k] = (list.reduce((sum, pid, i) => sum + cpuSeconds(pid) - before[k]![i]!, 0) * 1000) / IDLE_SECONDS;
  idle.PostgreSQL = ((pgCpu() - pg) * 1000) / IDLE_SECONDS;
  return idle;
}

const partsOf = (rows: Record<string, number>[], keys: string[]) => Object.fromEntries(keys.map((k) => [k, median(rows.map((r) => r[k]!))]));

async function rawRound(profile: boolean): Promise<Round> {
  const workers = await stack.rawWorkers(RAW_QUEUE, WORKERS, { WORKER_CONCURRENCY: String(CONCURRENCY) });
  const wait = poller(`SELECT id::text, state::text FROM pgboss.job WHERE name = '${RAW_QUEUE}' AND id = ANY(?::uuid[])`, (s) => s === 'completed');
  const item = async (n: number): Promise<Item> => {
    const sent = Date.now();
    const id = (await sender.send(RAW_QUEUE, { n }, { group: { id: orgOf(n) } }))!;
    const answered = Date.now();
    return { id, sent, answered, seen: await wait.wait(id) };
  };
  try {
    await drive(WARM_UP, item);
    const idle = await idleCpu({ 'raw workers': workers.map((w) => w.child.pid!) });
    const run = await measured(
      { 'raw workers': workers.map((w) => w.child.pid!) },
      PER_ROUND,
      item,
      () => wait.stop().then(() => stack.stop(workers)),
      profile,
    );
    const { rows } = await db.raw(
      `SELECT id::text, extract(epoch FROM created_on) * 1000 AS created, extract(epoch FROM started_on) * 1000 AS started,
              extract(epoch FROM completed_on) * 1000 AS completed FROM pgboss.job WHERE id = ANY(?::uuid[])`,
      [run.items.map((i) => i.id)],
    );
    const byId = new Map((rows as { id: string; created: string; started: string; completed: string }[]).map((r) => [r.id, r]));
    const parts = run.items.map((i) => {
      const r = byId.get(i.id)!;
      return {
        send: i.answered - i.sent,
        'pick-up': Number(r.started) - Number(r.created),
        run: Number(r.completed) - Number(r.started),
        'until seen': i.seen - Number(r.completed),
      };
    });
    return {
      rate: run.items.length / run.seconds,
      latency: run.items.map((i) => i.seen - i.sent),
      parts: partsOf(parts, ['send', 'pick-up', 'run', 'until seen']),
      cpu: run.cpu,
      idle,
      ...(run.database && { database: run.database }),
      ...(run.statements && { statements: run.statements }),
    };
  } finally {
    await wait.stop();
    await stack.stop(workers);
  }
}

async function oursRound(web: { url: string; process: ChildRun }, token: string, profile: boolean): Promise<Round> {
  const workers = await stack.workers(db, WORKERS);
  const wait = poller(`SELECT id::text, status AS state FROM generations WHERE id = ANY(?::uuid[])`, (s) => s === 'succeeded');
  const item = async (n: number): Promise<Item> => {
    const sent = Date.now();
    const res = await fetch(`${web.url}/generations`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ organization_id: orgOf(n), kind: 'image', prompt: `A bench picture number ${n}` }),
    });
    const body = (await res.json()) as { generation?: { id: string } };
    if (res.status !== 201) throw new Error(`POST /generations answered ${res.status}: ${JSON.stringify(body)}`);
    const answered = Date.now();
    return { id: body.generation!.id, sent, answered, seen: await wait.wait(body.generation!.id) };
  };
  try {
    await drive(WARM_UP, item);
    const idle = await idleCpu({ web: [web.process.child.pid!], workers: workers.map((w) => w.child.pid!) });
    const run = await measured(
      { web: [web.process.child.pid!], workers: workers.map((w) => w.child.pid!) },
      PER_ROUND,
      item,
      () => wait.stop().then(() => stack.stop(workers)),
      profile,
    );
    const { rows } = await db.raw(
      `SELECT g.id::text, extract(epoch FROM j.created_on) * 1000 AS created, extract(epoch FROM j.started_on) * 1000 AS picked,
              extract(epoch FROM g.started_at) * 1000 AS started, extract(epoch FROM g.finished_at) * 1000 AS finished
         FROM generations g JOIN pgboss.job j ON j.name = ? AND j.data->>'generation_id' = g.id::text AND j.state = 'completed'
        WHERE g.id = ANY(?::uuid[])`,
      [generationJob.name, run.items.map((i) => i.id)],
    );
    const byId = new Map((rows as { id: string; created: string; picked: string; started: string; finished: string }[]).map((r) => [r.id, r]));
    const parts = run.items.map((i) => {
      const r = byId.get(i.id)!;
      return {
        POST: i.answered - i.sent,
        'pick-up': Number(r.picked) - Number(r.created),
        'start step': Number(r.started) - Number(r.picked),
        'work + end': Number(r.finished) - Number(r.started),
        'until seen': i.seen - Number(r.finished),
      };
    });
    return {
      rate: run.items.length / run.seconds,
      latency: run.items.map((i) => i.seen - i.sent),
      parts: partsOf(parts, ['POST', 'pick-up', 'start step', 'work + end', 'until seen']),
      cpu: run.cpu,
      idle,
      ...(run.database && { database: run.database }),
      ...(run.statements && { statements: run.statements }),
    };
  } finally {
    await wait.stop();
    await stack.stop(workers);
  }
}

const describe = (label: string, r: Round) => {
  const sorted = ascending(r.latency);
  const parts = Object.entries(r.parts)
    .map(([k, v]) => `${k} ${v.toFixed(1)}`)
    .join(' + ');
  const cpu = Object.entries(r.cpu)
    .map(([k, v]) => `${k} ${v.toFixed(1)}`)
    .join(', ');
  const idle = Object.entries(r.idle)
    .map(([k, v]) => `${k} ${v.toFixed(0)}`)
    .join(', ');
  return `${label.padEnd(5)} ${fmt.rate(r.rate).padStart(7)}  p50 ${fmt.ms(percentile(sorted, 50)).padStart(9)}  p95 ${fmt.ms(percentile(sorted, 95)).padStart(9)}   p50 parts (ms): ${parts};  CPU ms/item: ${cpu};  idle CPU ms/s: ${idle}`;
};

try {
  await sender.start();
  await sender.createQueue(RAW_QUEUE, { policy: 'standard', notify: true, retryLimit: 2, retryDelay: 2, expireInSeconds: 1800, heartbeatSeconds: 20 });
  const token = await seedOrganizations(db, orgs);
  const web = await stack.web();
  if (CPU_PROFILES) console.log(`CPU profiles of the web and worker processes: ${CPU_PROFILES}`);
  console.log(
    `generations: ${PER_ROUND} per round × ${ROUNDS} rounds, ${CLIENTS} clients, ${ORGANIZATIONS} organization(s), ${WORKERS} worker processes × ${CONCURRENCY} (poll ${POLL_SECONDS} s), sandbox image, web process; load ${loads()} (1/5/15 min)`,
  );
  const raws: Round[] = [];
  const ours: Round[] = [];
  for (let round = 1; round <= ROUNDS; round++) {
    const profile = DB_PROFILE && round === ROUNDS;
    const raw = await rawRound(profile);
    const our = await oursRound(web, token, profile);
    raws.push(raw);
    ours.push(our);
    console.log(`round ${round} (load ${load()}): ours/raw ${fmt.x(our.rate / raw.rate)}`);
    console.log(`  ${describe('raw', raw)}`);
    console.log(`  ${describe('ours', our)}`);
  }
  const ratios = ours.map((o, i) => o.rate / raws[i]!.rate);
  const all = (list: Round[]) => ascending(list.flatMap((r) => r.latency));
  const [rawLatency, ourLatency] = [all(raws), all(ours)];
  if (raws.at(-1)!.database) console.log(`\ndatabase per raw job:    ${raws.at(-1)!.database}`);
  if (ours.at(-1)!.database) console.log(`database per generation: ${ours.at(-1)!.database}`);
  for (const [label, r] of [
    ['raw job', raws.at(-1)!],
    ['generation', ours.at(-1)!],
  ] as const)
    if (r.statements) console.log(`\nSQL per ${label} (pg_stat_statements, the last round):\n  ${r.statements.join('\n  ')}`);
  const assets = await db('assets').whereNotNull('generation_id').count('* as n').first();
  const captures = await db('credit_ledger_entries').where({ kind: 'capture' }).count('* as n').first();
  const total = ROUNDS * (PER_ROUND + WARM_UP);
  console.log(`after the run: ${assets?.n} assets and ${captures?.n} captures for ${total} generations`);
  console.log(
    `\nsummary: ${new Date().toISOString().slice(0, 10)}, load ${load()}: ours ${fmt.rate(median(ours.map((r) => r.rate)), ' generations/s')} ` +
      `(p50 ${fmt.ms(percentile(ourLatency, 50))}, p95 ${fmt.ms(percentile(ourLatency, 95))}) vs raw pg-boss ${fmt.rate(median(raws.map((r) => r.rate)), ' jobs/s')} ` +
      `(p50 ${fmt.ms(percentile(rawLatency, 50))}, p95 ${fmt.ms(percentile(rawLatency, 95))}) = **${fmt.x(median(ratios))}** (rounds ${ratios.map(fmt.x).join(', ')}); goal ≥ 0.4×: ${median(ratios) >= 0.4 ? 'met' : 'NOT met'}`,
  );
} finally {
  await sender.stop({ graceful: false, close: true });
  await stack.dispose();
  await db.destroy();
  await database.dispose();
}
