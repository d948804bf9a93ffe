import type { Knex } from 'knex';
import type { Db as BossDb } from 'pg-boss';
import type pg from 'pg';

interface PooledClient {
  acquireConnection(): Promise<pg.Client>;
  releaseConnection(connection: pg.Client): Promise<void>;
}

/**
 * pg-boss's statements on the process's knex pool instead of a pool of its own (PGBOSS_POOL_MAX=0):
 * one pool per process, so a fleet of small dynos fits Postgres's max_connections (docs/deployment.md
 * "Connection budget"). Each statement takes a pooled connection for itself only. pg-boss then
 * runs what it would have wrapped in a transaction of its own pool statement by statement; on
 * PostgreSQL each of those operations is a single statement (the multi-statement forms are its
 * CockroachDB variants), and our own multi-statement work passes a transaction (`fromKnex(trx)`) anyway.
 */
export function knexBossDb(db: Knex): BossDb {
  const client = db.client as PooledClient;
  return {
    async executeSql(text: string, values?: unknown[]) {
      const connection = await client.acquireConnection();
      try {
        return await connection.query(text, values);
      } finally {
        await client.releaseConnection(connection);
      }
    },
  };
}
