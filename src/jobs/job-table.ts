import type { Knex } from 'knex';
import { BOSS_SCHEMA } from './boss.ts';

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
 * parameters cannot be set on a partitioned parent). Idempotent; run by `release`.
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
