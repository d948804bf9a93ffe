import type { Knex } from 'knex';
import type pg from 'pg';

interface PooledClient {
  acquireConnection(): Promise<pg.Client>;
  releaseConnection(connection: pg.Client): Promise<void>;
}

/**
 * A hot read as a named prepared statement on one of knex's pooled connections: Postgres parses
 * and plans it once per connection instead of once per request, and knex builds no SQL (a
 * membership + organization join: ~10k/s through knex, ~37k/s prepared, `npm run bench:http`).
 * In a transaction (knex's transaction client hands out the transaction's connection) or outside
 * one; `name` must be unique per `text`. Poolers in transaction mode
 * (PgBouncer before 1.21) do not carry prepared statements across transactions.
 */
export async function queryPrepared<Row>(db: Knex, name: string, text: string, values: unknown[]): Promise<Row[]> {
  const client = db.client as PooledClient;
  const connection = await client.acquireConnection();
  try {
    return (await connection.query<Row & pg.QueryResultRow>({ name, text, values })).rows;
  } finally {
    await client.releaseConnection(connection);
  }
}
