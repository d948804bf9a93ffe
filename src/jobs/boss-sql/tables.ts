import type { Knex } from 'knex';
import { BOSS_SCHEMA } from '../boss.ts';
import { FAIR_CLAIM_INDEX } from './fair-share.ts';

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

/** The console's indexes on pg-boss's job table: name → columns and predicate. */
function consoleIndexes(searchableFields: readonly string[]): [string, string][] {
  return [
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
    ['job_ops_request_i', `((data->>'$request_id')) WHERE data ? '$request_id'`],
    // Jobs of an organization that are grouped by something else (webhook deliveries, by endpoint): the
    // other half of a tenant's organization filter (src/jobs/origin.ts jobOfOrganizationSql).
    ['job_ops_organization_created_i', `((data->>'$organization_id'), created_on DESC, id DESC) WHERE data ? '$organization_id'`],
    // A lost worker's attempts by the claim's mark (./claims.ts unrecordedAttempts): the ones it ended
    // but died before writing. Every claimed job is in it: one more entry per fetch, which already
    // writes a new version of the row into every index (its state is indexed).
    ['job_ops_claimed_i', `(claimed_by, completed_on) WHERE claimed_by IS NOT NULL`],
    // The weighted fair claim's skip scan over the organizations waiting and its probe of each (./fair-share.ts).
    FAIR_CLAIM_INDEX,
    ...searchableFields.map((field): [string, string] => {
      if (!/^[a-z][a-z0-9_]{0,40}$/.test(field)) throw new Error(`searchable payload field "${field}" must be a snake_case name`);
      return [searchableIndexName(field), `((data->>'${field}')) WHERE data ? '${field}'`];
    }),
  ];
}

/** An index on one physical table of `job`: valid (usable), or left invalid by an interrupted build. */
interface TableIndex {
  table: string;
  index: string;
  valid: boolean;
}

/**
 * The indexes the job console reads through, on pg-boss's job table: jobs by queue and by
 * organization over a time window, by the request that enqueued them, and by each payload field a
 * job definition declares searchable. Each index costs every job write a little, so only these
 * exist — payload search is limited to declared fields for that reason.
 *
 * Built without holding writes: `job` is partitioned (a table per queue), and CREATE INDEX
 * CONCURRENTLY cannot run on a partitioned parent, so each is declared on the parent alone (`ON
 * ONLY`: invalid, instant), built CONCURRENTLY on every partition, and attached; once every
 * partition's is attached the parent's is valid, and partitions pg-boss creates later (a new queue)
 * get it at creation. A build interrupted midway leaves an invalid index, dropped and rebuilt on the
 * next run. Idempotent and cheap when everything exists. `release` runs it right after pg-boss's own
 * migrations — the only place pg-boss may rebuild its tables (web and worker processes start it
 * with `migrate: false`) — so indexes an upgrade dropped come back in the same release. Runs
 * outside any transaction (CONCURRENTLY requires it). Returns the index names.
 */
export async function indexJobTable(db: Knex, searchableFields: readonly string[]): Promise<string[]> {
  const indexes = consoleIndexes(searchableFields);
  const partitions = await jobPartitions(db);
  for (const [name, definition] of indexes) {
    // knex reads a bare `?` as a binding: `\\?` is its escape for the jsonb operator.
    const sql = definition.replaceAll(' ? ', ' \\? ');
    if (partitions === null) {
      await buildConcurrently(db, name, 'job', sql);
      continue;
    }
    await db.raw(`CREATE INDEX IF NOT EXISTS ${name} ON ONLY ${BOSS_SCHEMA}.job ${sql}`);
    const attached = await attachedPartitions(db, name);
    for (const partition of partitions) {
      if (attached.has(partition)) continue;
      const child = partitionIndexName(name, partition);
      await buildConcurrently(db, child, partition, sql);
      await db.raw(`ALTER INDEX ${BOSS_SCHEMA}.${name} ATTACH PARTITION ${BOSS_SCHEMA}.${child}`);
    }
  }
  return indexes.map(([name]) => name);
}

/** `CREATE INDEX CONCURRENTLY` of `name` on `table`, first dropping an invalid one an interrupted build left. */
async function buildConcurrently(db: Knex, name: string, table: string, sql: string): Promise<void> {
  const existing = await indexOn(db, name);
  if (existing?.valid) return;
  if (existing) await db.raw(`DROP INDEX CONCURRENTLY IF EXISTS ${BOSS_SCHEMA}.${name}`);
  await db.raw(`CREATE INDEX CONCURRENTLY IF NOT EXISTS ${name} ON ${BOSS_SCHEMA}.${table} ${sql}`);
}

/** Index names are at most 63 bytes: the parent's name and the partition's oid-free hash suffix. */
const partitionIndexName = (name: string, partition: string) => `${name.slice(0, 40)}_${partition.replace(/^job_?/, '').slice(0, 20) || 'p'}`;

/** The physical tables of `job` (its partitions), or null when `job` itself is a plain table. */
async function jobPartitions(db: Knex): Promise<string[] | null> {
  const { rows } = await db.raw(
    `SELECT c.relname AS name, p.relkind AS parent_kind
       FROM pg_class p
       JOIN pg_namespace n ON n.oid = p.relnamespace
       LEFT JOIN pg_inherits i ON i.inhparent = p.oid
       LEFT JOIN pg_class c ON c.oid = i.inhrelid AND c.relkind = 'r'
      WHERE n.nspname = ? AND p.relname = 'job'`,
    [BOSS_SCHEMA],
  );
  const list = rows as { name: string | null; parent_kind: string }[];
  if (list[0]?.parent_kind !== 'p') return null;
  return list.flatMap((row) => (row.name ? [row.name] : []));
}

/** The partitions whose index is attached to the parent index `name`. */
async function attachedPartitions(db: Knex, name: string): Promise<Set<string>> {
  const { rows } = await db.raw(
    `SELECT t.relname AS table_name
       FROM pg_class parent
       JOIN pg_namespace n ON n.oid = parent.relnamespace
       JOIN pg_inherits i ON i.inhparent = parent.oid
       JOIN pg_index x ON x.indexrelid = i.inhrelid
       JOIN pg_class t ON t.oid = x.indrelid
      WHERE n.nspname = ? AND parent.relname = ?`,
    [BOSS_SCHEMA, name],
  );
  return new Set((rows as { table_name: string }[]).map((row) => row.table_name));
}

async function indexOn(db: Knex, name: string): Promise<TableIndex | null> {
  const { rows } = await db.raw(
    `SELECT t.relname AS table, c.relname AS index, x.indisvalid AS valid
       FROM pg_class c
       JOIN pg_namespace n ON n.oid = c.relnamespace
       JOIN pg_index x ON x.indexrelid = c.oid
       JOIN pg_class t ON t.oid = x.indrelid
      WHERE n.nspname = ? AND c.relname = ?`,
    [BOSS_SCHEMA, name],
  );
  return (rows[0] as TableIndex | undefined) ?? null;
}
