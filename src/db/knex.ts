import knex, { type Knex } from 'knex';
import pg from 'pg';
import { guardPool } from './transaction-guard.ts';

export type Db = Knex;
export type Tx = Knex.Transaction;

// bigint (count(*), sums) → number: every quantity we store stays far below 2^53.
pg.types.setTypeParser(pg.types.builtins.INT8, (value) => Number(value));

export type DbOptions = {
  max?: number;
  applicationName?: string;
  /**
   * Ends a session that stays idle inside a transaction this long (PostgreSQL rolls it back and
   * closes it). A process frozen mid-transaction (SIGSTOP, a paused VM) would otherwise keep its
   * row locks for as long as it stays frozen, and every retry of its work would wait on them.
   */
  idleInTransactionTimeoutMs?: number;
};

export function createDb(connectionString: string, options: DbOptions = {}): Db {
  const db = knex({
    client: 'pg',
    connection: {
      connectionString,
      application_name: options.applicationName ?? 'workspace',
      ...(options.idleInTransactionTimeoutMs !== undefined && { idle_in_transaction_session_timeout: options.idleInTransactionTimeoutMs }),
    },
    pool: {
      min: 0,
      max: options.max ?? 10,
      // Every session speaks UTC so timestamps and date arithmetic never depend on the server's zone.
      afterCreate: (conn: pg.Client, done: (error: Error | null, conn: pg.Client) => void) => {
        conn.query("SET TIME ZONE 'UTC'").then(
          () => done(null, conn),
          (error: Error) => done(error, conn),
        );
      },
    },
  });
  guardPool(db);
  return db;
}
