import { createHash } from 'node:crypto';
import type { PgBoss } from 'pg-boss';
import type pg from 'pg';
import { BOSS_SCHEMA } from '../boss.ts';

// pg-boss sends every statement unnamed, so PostgreSQL parses and plans each one anew. A worker's
// fetch and its settles run once or more per job, and their planning cost as much as their
// execution (bench:generations with --pg-statements: 11–16 ms of planning per generation, most of
// it pg-boss's). Sent as named prepared statements, each is planned once per connection: the
// fetch has no parameters (pg-boss inlines its queue and limits), so its plan is generic at once;
// the settles take their ids as parameters and get a generic plan after PostgreSQL's five custom ones.

/** The statements worth preparing: pg-boss's fetch (plans.fetchNextJob) and its settles (complete, fail). */
const HOT = new RegExp(
  [
    `\\bUPDATE ${BOSS_SCHEMA}\\.\\w+ j SET\\s+(?:claimed_by = \\$\\d+::uuid, )?state = 'active',`,
    `\\bSET completed_on = ${BOSS_SCHEMA}\\.job_now\\(\\),\\s+state = 'completed',`,
    `\\bdeleted_jobs AS \\(\\s*DELETE FROM ${BOSS_SCHEMA}\\.`,
  ].join('|'),
);
/**
 * A text of several commands (pg-boss's monitor wraps some fails in `BEGIN; …; COMMIT`) cannot be
 * a prepared statement: PostgreSQL refuses it, so it stays unnamed.
 */
const SEVERAL = /;\s*\S/;
/**
 * At most this many distinct statements are remembered per process (pg keeps each connection's
 * prepared statements for its lifetime): the fetch of each queue, the settles' few shapes and the
 * rest of pg-boss's statements fit many times over; anything beyond goes unnamed.
 */
const MOST = 512;

/** The name `text` is prepared under (one name per text, as pg requires), or null when it is sent unnamed. */
export const preparedName = (text: string): string | null =>
  HOT.test(text) && !SEVERAL.test(text) ? `pgboss_${createHash('sha1').update(text).digest('hex').slice(0, 24)}` : null;

/**
 * Sends this pg-boss instance's hot statements (its fetches and settles) as named prepared
 * statements on its own pool. Only for an instance with its own pool (a worker's, `PGBOSS_POOL_MAX`
 * > 0); one that shares knex's pool keeps sending them unnamed. Install before any other wrapper of
 * `executeSql` (./claims.ts `recordClaims`), so the statement prepared is the one finally sent.
 */
export function prepareHotStatements(boss: PgBoss): void {
  // pg-boss's own database creates its pool when the instance starts, so it is looked up per call.
  const db = boss.getDb() as unknown as { pool?: pg.Pool; executeSql(text: string, values?: unknown[]): Promise<unknown> };
  const execute = db.executeSql.bind(db);
  /** Each statement seen: its prepared name, or null when it is sent unnamed. */
  const names = new Map<string, string | null>();
  db.executeSql = (text: string, values?: unknown[]) => {
    const pool = db.pool;
    if (!pool || typeof pool.query !== 'function') return execute(text, values);
    let name = names.get(text);
    if (name === undefined && names.size < MOST) {
      name = preparedName(text);
      names.set(text, name);
    }
    return name ? pool.query({ name, text, values: values ?? [] }) : execute(text, values);
  };
}
