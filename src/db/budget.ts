import type { Config } from '../config/schema.ts';

export type ProcessKind = 'web' | 'worker';

/** Connections one process may hold at most: its knex pool, pg-boss's pool and the one LISTEN connection. */
export interface ConnectionBudget {
  knex: number;
  /** pg-boss's own pool; 0: its statements run on the knex pool (src/jobs/boss-db.ts). */
  boss: number;
  /** The notification hub's connection (src/db/notifications.ts), shared by every channel of the process. */
  listen: 1;
  total: number;
}

/**
 * Pool sizes per process kind (docs/deployment.md "Connection budget"). Every process opens its own pools, so
 * the fleet's sum must stay below Postgres's max_connections: DB_POOL_MAX and PGBOSS_POOL_MAX set
 * them for small dynos. Both defaults are fixed, whatever a worker's slots: a slot takes a
 * connection per statement or short transaction (a step), never while it waits on a model or a
 * provider, so hundreds of waiting slots share a pool sized for the statements in flight at once
 * (a bigger pool only queues more work inside Postgres: `npm run bench:http`).
 */
export function connectionBudget(config: Config, kind: ProcessKind): ConnectionBudget {
  const knex = config.DB_POOL_MAX ?? (kind === 'web' ? WEB_POOL_DEFAULT : WORKER_POOL_DEFAULT);
  // The web only sends jobs (mostly in its own transactions): its pg-boss shares the knex pool. A
  // worker's slots fetch, complete and heartbeat through pg-boss's pool.
  const boss = config.PGBOSS_POOL_MAX ?? (kind === 'web' ? 0 : 8);
  return { knex, boss, listen: 1, total: knex + boss + 1 };
}

const WEB_POOL_DEFAULT = 10;
/** A worker's: its steps, ends, attempt log, registry, pause gate and slot waker's poll at once. */
const WORKER_POOL_DEFAULT = 16;
