// `npm run bench:console`: the job console's reads at a million jobs (issue 25), over HTTP as an
// operator sees them, against a baseline measured in the same run.
//
// Seeds `--jobs` (1,000,000) jobs in one INSERT … SELECT generate_series into pgboss.job, with the
// columns pg-boss fills on send (name, data with `$request_id` and the resource ids, state, group_id
// = organization, created_on/start_after, started_on/completed_on by state) — seconds, not a million
// API calls — spread over 30 days across the platform's queues and 100 organizations (1% queued, 0.5%
// retrying, 0.1% running, 2% failed, the rest completed), then VACUUM (ANALYZE) (what autovacuum does
// once 2% of a job table is new). Then, interleaved in rounds, each console read `--samples` times (default 40) after
// warm-up; prints p50/p95 of each and its ratio to the baseline:
//   baseline (SQL)   a bare by-primary-key SELECT of pgboss.job through pg
//   baseline (HTTP)  GET /ops/me: an authenticated round trip with one indexed query
// and the deep page (a cursor 950,000 rows deep in a 31-day window) against page 1 of the same list.
// Goals: every read p95 ≤ 50 ms; deep page ≤ 2× page 1.
//   npm run bench:console -- --jobs=100000 --samples=20
import pg from 'pg';
import { encodeCursor } from '../src/core/pagination.ts';
import { createDb } from '../src/db/knex.ts';
import { allJobs } from '../src/app/jobs.ts';
import { BOSS_SCHEMA } from '../src/jobs/boss.ts';
import { indexJobTable } from '../src/jobs/boss-sql/index.ts';
import { newOperator } from '../test/support/factories.ts';
import { startTestServer } from '../test/support/server.ts';
import { ascending, int, load, percentile, readFlags } from './support/bench.ts';
import { benchDatabase } from './support/database.ts';

readFlags();
const JOBS = int('JOBS', 1_000_000);
const SAMPLES = int('SAMPLES', 40);
const DEEP = Math.min(int('DEEP', 950_000), Math.floor(JOBS * 95));
const ORGANIZATIONS = Array.from({ length: 100 }, (_, i) => `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`);
const SEARCHABLE = [...new Set(allJobs.flatMap((job) => job.searchable))];

const database = await benchDatabase();
const url = await database.createMigratedDatabase('bench_console');
const db = createDb(url, { max: 4 });
const queues = (
  (await db(`${BOSS_SCHEMA}.queue`).whereNot('name', 'like', '%.dead').whereNot('name', 'like', '\\_\\_pgboss%').select('name').orderBy('name')) as {
    name: string;
  }[]
).map((row) => row.name);

const seedStart = Date.now();
// 30 days over JOBS rows: the newest first at i = 1.
const spacing = (30 * 86_400) / JOBS;
await db.raw(
  `INSERT INTO ${BOSS_SCHEMA}.job (id, name, data, state, group_id, created_on, start_after, started_on, completed_on, retry_count)
   SELECT gen_random_uuid(), (?::text[])[1 + i % ?],
          jsonb_build_object('$request_id', 'req-' || i, 'asset_id', 'asset-' || i, 'run_id', 'run-' || i),
          s.state, (?::text[])[1 + i % 100], c.created_on,
          CASE WHEN s.state = 'retry' THEN now() + interval '10 minutes' ELSE c.created_on END,
          CASE WHEN s.state <> 'created' THEN c.created_on END,
          CASE WHEN s.state > 'active' THEN c.created_on + interval '2 seconds' END,
          CASE WHEN s.state IN ('retry', 'failed') THEN 1 ELSE 0 END
     FROM generate_series(1, ?) i,
          LATERAL (SELECT now() - make_interval(secs => i * ?::float8) AS created_on) c,
          LATERAL (SELECT (CASE WHEN i % 1000 < 10 THEN 'created' WHEN i % 1000 < 15 THEN 'retry' WHEN i % 1000 = 15 THEN 'active'
                                WHEN i % 1000 < 36 THEN 'failed' ELSE 'completed' END)::${BOSS_SCHEMA}.job_state AS state) s`,
  [queues, queues.length, ORGANIZATIONS, JOBS, spacing],
);
await indexJobTable(db, SEARCHABLE);
// What autovacuum does soon after a million inserts (the job tables vacuum after 2% inserted: ./src/jobs/boss-sql/tables.ts).
await db.raw(`VACUUM (ANALYZE) ${BOSS_SCHEMA}.job`);
const seeded = Number((await db.raw(`SELECT count(*) AS n FROM ${BOSS_SCHEMA}.job`)).rows[0].n);
console.log(`seeded ${seeded.toLocaleString()} jobs over ${queues.length} queues and 100 organizations in ${((Date.now() - seedStart) / 1000).toFixed(1)} s`);

const server = await startTestServer({ LOG_LEVEL: 'silent' }, { databaseUrl: url });
const operator = newOperator();
const client = new pg.Client({ connectionString: url });
await client.connect();

// What the reads look for: a job near the newest end, one deep in the table, the cursor 950k rows deep.
const pick = async (offset: number) =>
  (
    await client.query(
      `SELECT id, created_on::text AS created, name, group_id, data FROM ${BOSS_SCHEMA}.job ORDER BY created_on DESC, id DESC OFFSET $1 LIMIT 1`,
      [offset],
    )
  ).rows[0] as { id: string; created: string; name: string; group_id: string; data: Record<string, string> };
const recent = await pick(100);
const old = await pick(Math.floor(JOBS * 0.6));
const deep = await pick(DEEP - 1);
const now = Date.now();
const month = { from: new Date(now - 31 * 86_400_000 + 120_000).toISOString(), to: new Date(now + 60_000).toISOString() };

type Read = { name: string; run: () => Promise<unknown> };
const http = (name: string, path: string, query: Record<string, string> = {}, body?: unknown): Read => ({
  name,
  run: async () => {
    const target = new URL(path, server.url);
    for (const [key, value] of Object.entries(query)) target.searchParams.set(key, value);
    const response = await fetch(target, {
      method: body ? 'POST' : 'GET',
      headers: { authorization: `Bearer ${operator.token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    const text = await response.text();
    if (response.status !== 200) throw new Error(`${name}: ${response.status} ${text.slice(0, 300)}`);
    return text;
  },
});

const reads: Read[] = [
  { name: 'baseline (SQL): job by primary key', run: () => client.query(`SELECT * FROM ${BOSS_SCHEMA}.job WHERE id = $1`, [recent.id]) },
  http('baseline (HTTP): GET /ops/me', '/ops/me'),
  http('list: all (24 h, page 1)', '/ops/jobs'),
  http('list: by queue', '/ops/jobs', { queue: recent.name }),
  http('list: by organization', '/ops/jobs', { organization_id: recent.group_id }),
  http('list: by state (failed)', '/ops/jobs', { state: 'failed' }),
  http('list: by queue and state', '/ops/jobs', { queue: recent.name, state: 'failed' }),
  http('list: cron jobs', '/ops/jobs', { origin: 'cron' }),
  http('list: stuck', '/ops/jobs', { stuck: 'true' }),
  http('list: all, 31 days, page 1', '/ops/jobs', { origin: 'all', ...month }),
  http(`list: all, 31 days, ${DEEP.toLocaleString()} deep`, '/ops/jobs', { origin: 'all', ...month, cursor: encodeCursor([deep.created, deep.id]) }),
  http('lookup: request id (recent)', `/ops/lookups/requests/${recent.data.$request_id}`),
  http('lookup: request id (old)', `/ops/lookups/requests/${old.data.$request_id}`),
  http('lookup: resource id', `/ops/lookups/resources/${old.data.asset_id}`),
  http('job by id', `/ops/jobs/${old.id}`),
  http('queue health', '/ops/queues'),
  http('queue health: one organization', '/ops/queues', { organization_id: recent.group_id }),
  http('fairness panel', '/ops/organizations'),
  http('bulk preview (retry failed, one queue)', '/ops/bulk-actions/preview', {}, { action: 'retry', filter: { queue: recent.name, state: 'failed' } }),
];

if (process.env.BENCH_EXPLAIN) {
  // --explain=1: the plans of the deep page and page 1 (the list statement as listJobRows sends it).
  for (const cursor of [null, [deep.created, deep.id]]) {
    const { rows } = await client.query(
      `EXPLAIN (ANALYZE, BUFFERS) SELECT id FROM ${BOSS_SCHEMA}.job WHERE created_on >= $1 AND ${cursor ? '(created_on, id) < ($2::timestamptz, $3::uuid)' : 'created_on < $2'}
        ORDER BY created_on DESC, id DESC LIMIT 51`,
      [month.from, ...(cursor ?? [month.to])],
    );
    console.log(rows.map((row) => row['QUERY PLAN']).join('\n'));
  }
}

// Warm-up, then rounds taking turns (the machine's speed swings: each read sees the same swings).
for (const read of reads) for (let i = 0; i < 3; i++) await read.run();
const times = new Map(reads.map((read) => [read.name, [] as number[]]));
const loads: string[] = [load()];
for (let round = 0; round < SAMPLES; round++) {
  for (const read of reads) {
    const start = performance.now();
    await read.run();
    times.get(read.name)!.push(performance.now() - start);
  }
}
loads.push(load());

const p = (name: string, q: number) => percentile(ascending(times.get(name)!), q);
const baseline = p('baseline (HTTP): GET /ops/me', 95);
const sql = p('baseline (SQL): job by primary key', 95);
const width = Math.max(...reads.map((read) => read.name.length));
console.log(`\n${seeded.toLocaleString()} jobs, ${SAMPLES} samples each, load ${loads.join(' → ')}`);
console.log(`${'read'.padEnd(width)}  p50 ms   p95 ms   p95 / HTTP baseline   p95 ≤ 50 ms`);
for (const read of reads) {
  const p95 = p(read.name, 95);
  const ratio = read.name.startsWith('baseline (SQL)') ? `${(p95 / baseline).toFixed(2)}×` : `${(p95 / baseline).toFixed(1)}×`;
  console.log(
    `${read.name.padEnd(width)}  ${p(read.name, 50).toFixed(1).padStart(6)}   ${p95.toFixed(1).padStart(6)}   ${ratio.padStart(19)}   ${p95 <= 50 ? 'yes' : 'NO'}`,
  );
}
const page1 = p('list: all, 31 days, page 1', 95);
const deepP95 = p(`list: all, 31 days, ${DEEP.toLocaleString()} deep`, 95);
console.log(`\ndeep page / page 1 (p95): ${(deepP95 / page1).toFixed(2)}× (goal ≤ 2×); SQL baseline p95 ${sql.toFixed(2)} ms`);
// The total a default list shows at this size.
const listed = JSON.parse((await reads[2]!.run()) as string) as { total: unknown };
console.log(`default list's total: ${JSON.stringify(listed.total)}`);

await client.end();
await server.stop();
await db.destroy();
await database.dispose();
