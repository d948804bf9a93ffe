import type { Knex } from 'knex';
import { Gauge, type Registry } from 'prom-client';

/** The part of tarn's pool (knex's) the gauges read; absent before the first query and after destroy(). */
interface TarnPool {
  numUsed(): number;
  numFree(): number;
  numPendingAcquires(): number;
  numPendingCreates(): number;
  max: number;
}

/**
 * Gauges of a knex connection pool, read when scraped (no timers): `db_pool_connections_used`,
 * `_free`, `db_pool_pending_acquires` (queries waiting for a connection: the pool is the
 * bottleneck), `db_pool_pending_creates` and `db_pool_connections_max`, labelled `pool` (web|worker).
 */
export function registerPoolMetrics(registry: Registry, db: Knex, pool: 'web' | 'worker'): void {
  const tarn = () => (db.client as { pool?: TarnPool }).pool;
  const gauge = (name: string, help: string, read: (p: TarnPool) => number) =>
    new Gauge({
      name,
      help,
      labelNames: ['pool'],
      registers: [registry],
      collect() {
        const current = tarn();
        this.reset();
        if (current) this.set({ pool }, read(current));
      },
    });
  gauge('db_pool_connections_used', 'Database connections checked out of the pool', (p) => p.numUsed());
  gauge('db_pool_connections_free', 'Idle database connections in the pool', (p) => p.numFree());
  gauge('db_pool_pending_acquires', 'Queries waiting for a pooled connection', (p) => p.numPendingAcquires());
  gauge('db_pool_pending_creates', 'Database connections being opened', (p) => p.numPendingCreates());
  gauge('db_pool_connections_max', 'Largest size the pool may grow to', (p) => p.max);
}
