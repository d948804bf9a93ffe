import type { Knex } from 'knex';
import { BOSS_SCHEMA } from '../boss.ts';

// Table tuning of pg-boss's job table, run by `release`: autovacuum settings and the console's indexes.

/**
 * Autovacuum settings for pg-boss's job tables. A queue table churns (every job is inserted,
 * updated twice and deleted), and its fetch query picks a bad plan when planner statistics are
 * stale — a 20k backlog drained ~40× slower in bench/job-pickup.ts. Analyze after ~1% change
 * and vacuum after ~2% instead of Postgres's 10% / 20%.
 */
export const jobTableStorage = {
  autovacuum_analyze_scale_factor: 0.01,
  autovacuum_analyze_threshold: 500,
  autovacuum_vacuum_scale_factor: 0.02,
  autovacuum_vacuum_threshold: 1000,
  autovacuum_vacuum_insert_scale_factor: 0.02,
} as const;

/**
 * Applies `jobTableStorage` to every physical job table (the partitions of `job`: storage
 * parameters cannot be set on a partitioned parent). Idempotent. Returns the tables tuned.
 */
export async function tuneJobTables(db: Knex): Promise<string[]> {
  const { rows } = await db.raw(
    `SELECT c.relname AS name
       FROM pg_inherits i
       JOIN pg_class c ON c.oid = i.inhrelid
       JOIN pg_class p ON p.oid = i.inhparent
       JOIN pg_namespace n ON n.oid = p.relnamespace
      WHERE n.nspname = :schema AND p.relname = 'job' AND c.relkind = 'r'
     UNION
     SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = :schema AND c.relname = 'job' AND c.relkind = 'r'`,
    { schema: BOSS_SCHEMA },
  );
  const settings = Object.entries(jobTableStorage)
    .map(([key, value]) => `${key} = ${value}`)
    .join(', ');
  const tables = (rows as { name: string }[]).map((row) => row.name);
  for (const table of tables) await db.raw(`ALTER TABLE ??.?? SET (${settings})`, [BOSS_SCHEMA, table]);
  return tables;
}

/** Where a declared-searchable payload field is indexed (one partial expression index per field name). */
export const searchableIndexName = (field: string) => `job_ops_payload_${field}_i`;

/**
 * The indexes the job console reads through, on pg-boss's job table (created on the partitioned
 * parent, so every partition has them): jobs by queue and by organization over a time window, by
 * the request that enqueued them, and by each payload field a job definition declares searchable.
 * Each index costs every job write a little, so only these exist — payload search is limited to
 * declared fields for that reason. Idempotent (a plain CREATE INDEX: the first release on a large
 * existing table holds writes to it while it builds). Returns the index names.
 */
export async function indexJobTable(db: Knex, searchableFields: readonly string[]): Promise<string[]> {
  const statements: [string, string][] = [
    ['job_ops_created_i', `(created_on DESC, id DESC)`],
    ['job_ops_queue_created_i', `(name, created_on DESC, id DESC)`],
    // Running jobs per queue (pg-boss indexes them only with a group id).
    ['job_ops_active_i', `(name) WHERE state = 'active'`],
    // Open jobs (waiting, retrying, running) per organization and queue: queue health and the fairness
    // panel. pg-boss's own fetch index job_i11 is partial on `NOT blocked` too, so it cannot answer
    // counts that include blocked jobs; without this those counts scan every finished job.
    ['job_ops_open_i', `(group_id, name, state) WHERE state <= 'active'`],
    // Queue health's waiting counts and oldest due job over every organization: the same open jobs,
    // with the columns it reads, so the count is an index-only scan once vacuum has marked the pages.
    ['job_ops_waiting_i', `(name, state, start_after, created_on) WHERE state < 'active'`],
    ['job_ops_group_created_i', `(group_id, created_on DESC, id DESC) WHERE group_id IS NOT NULL`],
    ['job_ops_request_i', `((data->>'$request_id')) WHERE data \\? '$request_id'`],
    ...searchableFields.map((field): [string, string] => {
      if (!/^[a-z][a-z0-9_]{0,40}$/.test(field)) throw new Error(`searchable payload field "${field}" must be a snake_case name`);
      return [searchableIndexName(field), `((data->>'${field}')) WHERE data \\? '${field}'`];
    }),
  ];
  // `\\?` is knex's escape for the jsonb `?` operator (a bare `?` is a binding).
  for (const [name, definition] of statements) await db.raw(`CREATE INDEX IF NOT EXISTS ${name} ON ${BOSS_SCHEMA}.job ${definition}`);
  return statements.map(([name]) => name);
}
