import type { Knex } from 'knex';

/** Users (just in time from tokens) and the shared rate-limit windows. */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE users (
      id text PRIMARY KEY,
      email text,
      name text,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX users_email_idx ON users (lower(email));

    -- UNLOGGED: counters are worth no WAL; after a crash every caller simply starts a fresh window.
    CREATE UNLOGGED TABLE rate_limit_windows (
      caller text NOT NULL,
      window_start timestamptz NOT NULL,
      hits integer NOT NULL,
      PRIMARY KEY (caller, window_start)
    );
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE rate_limit_windows; DROP TABLE users;');
}
