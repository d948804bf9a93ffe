import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Knex } from 'knex';
import { startEmbeddedPostgres } from '../../src/db/embedded.ts';
import { createLogger } from '../../src/platform/logger.ts';
import { createTestDatabase, type TestDatabase } from '../../test/support/database.ts';

/**
 * A throw-away migrated database (test/support/database.ts: DATABASE_URL's server, else an embedded
 * PostgreSQL tuned for speed). With `statements` (a bench's --pg-statements=1) and no DATABASE_URL,
 * the embedded server loads pg_stat_statements, so `topStatements` can say which SQL the time went to.
 */
export async function benchDatabase(statements = false): Promise<TestDatabase & { statements: boolean }> {
  if (!statements || process.env.DATABASE_URL) return { ...(await createTestDatabase()), statements: false };
  const dir = await mkdtemp(path.join(tmpdir(), 'workspace-bench-pg-'));
  const server = await startEmbeddedPostgres({
    dir,
    database: 'postgres',
    log: createLogger({ LOG_LEVEL: 'silent' }, 'bench-db'),
    flags: [
      ...['-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off'],
      ...['-c', 'shared_preload_libraries=pg_stat_statements', '-c', 'pg_stat_statements.track=all', '-c', 'pg_stat_statements.track_planning=on'],
      '-c',
      'track_io_timing=on',
    ],
  });
  process.env.DATABASE_URL = server.url;
  const database = await createTestDatabase();
  delete process.env.DATABASE_URL;
  return {
    ...database,
    statements: true,
    async dispose() {
      await database.dispose();
      await server.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** Forgets the statements counted so far (call before the measured part). */
export async function resetStatements(db: Knex): Promise<void> {
  await db.raw('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
  await db.raw('SELECT pg_stat_statements_reset()');
}

/** The statements that took the most execution time since the reset, those called most and those planned longest, per unit of work (calls and ms), as printable lines. */
export async function topStatements(db: Knex, units: number, limit = 12): Promise<string[]> {
  const top = async (order: string) =>
    (
      await db.raw(
        `SELECT calls, total_exec_time AS ms, total_plan_time AS plan, regexp_replace(query, '\\s+', ' ', 'g') AS query
           FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
          ORDER BY ${order} DESC LIMIT ?`,
        [limit],
      )
    ).rows as { calls: string; ms: number; plan: number; query: string }[];
  const { rows: total } = await db.raw(
    `SELECT sum(calls) AS calls, sum(calls) FILTER (WHERE toplevel) AS top, sum(total_exec_time) AS ms, sum(total_plan_time) AS plan FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())`,
  );
  const per = (n: number) => (n / units).toFixed(2);
  const line = (r: { calls: string; ms: number; plan: number; query: string }) =>
    `${per(Number(r.calls)).padStart(7)} calls ${per(r.ms).padStart(7)} ms ${per(r.plan).padStart(6)} ms planning  ${r.query.slice(0, 150)}`;
  return [
    `all statements: ${per(Number(total[0].calls))} calls (${per(Number(total[0].top))} sent by clients, the rest run inside functions and triggers), ${per(Number(total[0].ms))} ms of execution and ${per(Number(total[0].plan))} ms of planning per unit; by time:`,
    ...(await top('total_exec_time')).map(line),
    'by calls:',
    ...(await top('calls')).map(line),
    'by planning time:',
    ...(await top('total_plan_time')).map(line),
  ];
}
