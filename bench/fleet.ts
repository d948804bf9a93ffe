/**
 * Many dynos, one Postgres (docs/deployment.md "Connection budget"): a fleet of real `web` and `worker`
 * processes with small pools against one embedded PostgreSQL started with a small
 * `max_connections`, driven by HTTP reads and generation jobs at once. Proves the fleet fits: it
 * counts connection errors (Postgres refusing a connection, a pool timing out on one) in every
 * process's output and in the clients' answers, and samples `pg_stat_activity` every 100 ms for the
 * peak number of connections, by process kind (application_name).
 *
 * Flags (or BENCH_*): --web (4), --workers (20), --max-connections (100), --seconds (30),
 * --clients (24; half read, half start generations and read them until they succeed),
 * --web-pool (DB_POOL_MAX of a web, 4), --worker-pool (DB_POOL_MAX of a worker, 2),
 * --boss-pool (PGBOSS_POOL_MAX of both, 0: pg-boss on the knex pool), --concurrency (WORKER_CONCURRENCY, 1);
 * a pool flag `default` leaves its variable unset (the defaults of src/db/budget.ts: the fleet before the budget).
 * Run: npm run bench:fleet      (~3 min on 2 cores for 24 processes; --workers=8 for a lighter run)
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { startEmbeddedPostgres } from '../src/db/embedded.ts';
import { createDb } from '../src/db/knex.ts';
import { createLogger } from '../src/platform/logger.ts';
import { createTestDatabase } from '../test/support/database.ts';
import type { ChildRun } from '../test/support/processes.ts';
import { ascending, int, load, percentile, readFlags, text } from './support/bench.ts';
import { benchStack, seedOrganizations } from './support/stack.ts';

readFlags();
const WEBS = Math.max(1, int('WEB', 4));
const WORKERS = Math.max(1, int('WORKERS', 20));
const MAX_CONNECTIONS = Math.max(10, int('MAX_CONNECTIONS', 100));
const SECONDS = Math.max(1, int('SECONDS', 30));
const CLIENTS = Math.max(2, int('CLIENTS', 24));
/** A pool flag: a size, or `default` to leave the variable unset (the process kind's default, src/db/budget.ts). */
const poolFlag = (variable: string, flag: string, fallback: number): Record<string, string> =>
  text(flag, '') === 'default' ? {} : { [variable]: String(int(flag, fallback)) };
const WEB_POOL = poolFlag('DB_POOL_MAX', 'WEB_POOL', 4);
const WORKER_POOL = poolFlag('DB_POOL_MAX', 'WORKER_POOL', 2);
const BOSS_POOL = poolFlag('PGBOSS_POOL_MAX', 'BOSS_POOL', 0);
const CONCURRENCY = String(Math.max(1, int('CONCURRENCY', 1)));

/** What a process or a client says when the database has no connection for it. */
const CONNECTION_ERROR =
  /too many clients|remaining connection slots|connection slots are reserved|Timeout acquiring a connection|timeout exceeded when trying to connect|Connection terminated unexpectedly|ECONNREFUSED/i;

const dir = await mkdtemp(path.join(tmpdir(), 'workspace-fleet-'));
const server = await startEmbeddedPostgres({
  dir,
  database: 'postgres',
  log: createLogger({ LOG_LEVEL: 'silent' }, 'bench-db'),
  // Later flags win: this server allows MAX_CONNECTIONS, Postgres's default unless told otherwise.
  flags: ['-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off', '-c', `max_connections=${MAX_CONNECTIONS}`],
});
process.env.DATABASE_URL = server.url;
const database = await createTestDatabase();
delete process.env.DATABASE_URL;
// The bench's own connection (one, counted in the peak as "bench").
const db = createDb(database.url, { max: 1, applicationName: 'bench' });
const stack = await benchStack(database.url, { WORKER_CONCURRENCY: CONCURRENCY, ...BOSS_POOL, WORKER_POLL_INTERVAL_SECONDS: '2' });

const peak = { total: 0, byKind: {} as Record<string, number> };
let sampling = true;
const sampler = (async () => {
  while (sampling) {
    const { rows } = await db.raw(
      `SELECT coalesce(nullif(application_name, ''), '(other)') AS kind, count(*)::int AS n FROM pg_stat_activity
        WHERE backend_type = 'client backend' GROUP BY 1`,
    );
    const total = (rows as { n: number }[]).reduce((sum, row) => sum + row.n, 0);
    if (total > peak.total) {
      peak.total = total;
      peak.byKind = Object.fromEntries((rows as { kind: string; n: number }[]).map((row) => [row.kind, row.n]));
    }
    await sleep(100);
  }
})();

const processes: ChildRun[] = [];
const clientErrors: string[] = [];
try {
  const { rows: setting } = await db.raw(`SELECT current_setting('max_connections') AS max, current_setting('superuser_reserved_connections') AS reserved`);
  console.log(
    `fleet: ${WEBS} web (DB_POOL_MAX=${WEB_POOL.DB_POOL_MAX ?? 'default'}) + ${WORKERS} worker (DB_POOL_MAX=${WORKER_POOL.DB_POOL_MAX ?? 'default'}, WORKER_CONCURRENCY=${CONCURRENCY}) processes, PGBOSS_POOL_MAX=${BOSS_POOL.PGBOSS_POOL_MAX ?? 'default'}; ` +
      `Postgres max_connections=${setting[0].max} (superuser_reserved_connections=${setting[0].reserved}); load ${load()}`,
  );
  const org = 'bench-org';
  const token = await seedOrganizations(db, [org]);
  const [asset] = await db('assets')
    .insert({
      organization_id: org,
      created_by_id: 'bench-user',
      type: 'text',
      title: 'Bench',
      content: 'x',
      visibility: 'workspace',
      enrichment_state: 'ignored',
    })
    .returning('id');

  const started = Date.now();
  const webs: { url: string; process: ChildRun }[] = [];
  for (let i = 0; i < WEBS; i++) webs.push(await stack.web(WEB_POOL));
  processes.push(...webs.map((web) => web.process));
  processes.push(...(await stack.workers(db, WORKERS, WORKER_POOL)));
  console.log(`started in ${((Date.now() - started) / 1000).toFixed(0)} s; load ${load()}; driving for ${SECONDS} s with ${CLIENTS} clients`);

  const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
  const statuses: Record<string, number> = {};
  const count = (what: string) => (statuses[what] = (statuses[what] ?? 0) + 1);
  const latencies: number[] = [];
  const generations: number[] = [];
  const deadline = Date.now() + SECONDS * 1000;
  const call = async (url: string, init: RequestInit = {}) => {
    try {
      const res = await fetch(url, { ...init, headers });
      const body = await res.json();
      count(`${init.method ?? 'GET'} ${res.status}`);
      if (res.status >= 500) clientErrors.push(`${res.status} ${JSON.stringify(body).slice(0, 300)}`);
      return { status: res.status, body };
    } catch (error) {
      clientErrors.push(String(error));
      return { status: 0, body: undefined };
    }
  };
  await Promise.all(
    Array.from({ length: CLIENTS }, async (_, i) => {
      const web = webs[i % webs.length]!;
      let n = 0;
      while (Date.now() < deadline) {
        if (i % 2 === 0) {
          // A reader: the two by-id reads, in turn.
          const t = performance.now();
          await call(n++ % 2 ? `${web.url}/organizations/${org}` : `${web.url}/assets/${asset.id}`);
          latencies.push(performance.now() - t);
          continue;
        }
        // A job client: one generation (a worker runs it), read until it ends, from another web.
        const t = Date.now();
        const made = await call(`${web.url}/generations`, {
          method: 'POST',
          body: JSON.stringify({ organization_id: org, kind: 'image', prompt: `fleet ${i}-${n++}` }),
        });
        const id = (made.body as { generation?: { id: string } } | undefined)?.generation?.id;
        if (!id) continue;
        for (;;) {
          await sleep(100);
          const seen = await call(`${webs[(i + 1) % webs.length]!.url}/generations/${id}`);
          const status = (seen.body as { generation?: { status: string } } | undefined)?.generation?.status;
          if (status === 'succeeded') {
            generations.push(Date.now() - t);
            break;
          }
          if (seen.status !== 200 || status === 'failed' || status === 'canceled') {
            clientErrors.push(`generation ${id}: ${seen.status} ${status}`);
            break;
          }
        }
      }
    }),
  );
  sampling = false;
  await sampler;

  const sorted = ascending(latencies);
  const outputErrors = processes.flatMap((p) => `${p.stdout()}\n${p.stderr()}`.split('\n').filter((line) => CONNECTION_ERROR.test(line)));
  const exited = processes.filter((p) => p.child.exitCode !== null || p.child.signalCode !== null).length;
  console.log(`requests: ${JSON.stringify(statuses)}; reads p50 ${percentile(sorted, 50).toFixed(0)} ms, p99 ${percentile(sorted, 99).toFixed(0)} ms`);
  console.log(`generations succeeded: ${generations.length}, p50 ${percentile(ascending(generations), 50).toFixed(0)} ms end to end`);
  console.log(`peak connections in pg_stat_activity: ${peak.total} of ${MAX_CONNECTIONS}, by application_name ${JSON.stringify(peak.byKind)}`);
  console.log(
    `connection errors: ${outputErrors.length} in process output, ${clientErrors.filter((e) => CONNECTION_ERROR.test(e)).length} in answers; other client errors: ${clientErrors.filter((e) => !CONNECTION_ERROR.test(e)).length}; processes exited early: ${exited}; load ${load()}`,
  );
  for (const line of [...outputErrors, ...clientErrors].slice(0, 10)) console.log(`  ${line.slice(0, 400)}`);
  if (outputErrors.length || clientErrors.length || exited) process.exitCode = 1;
} finally {
  sampling = false;
  await sampler.catch(() => undefined);
  await stack.dispose();
  await db.destroy();
  await database.dispose();
  await server.stop();
  await rm(dir, { recursive: true, force: true });
}
