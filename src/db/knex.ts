import knex, { type Knex } from 'knex';
import pg from 'pg';

export type Db = Knex;
export type Tx = Knex.Transaction;

// bigint (count(*), sums) → number: every quantity we store stays far below 2^53.
pg.types.setTypeParser(pg.types.builtins.INT8, (value) => Number(value));

export function createDb(connectionString: string, options: { max?: number; applicationName?: string } = {}): Db {
  return knex({
    client: 'pg',
    connection: { connectionString, application_name: options.applicationName ?? 'workspace' },
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
}
