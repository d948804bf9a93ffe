import type { Knex } from 'knex';

/**
 * An organization's weight in the fair share of every queue (src/jobs/boss-sql/fair-share.ts): with
 * others active, it gets slots in proportion to it. No row: 1, like every organization; an operator (or
 * a plan) may raise it. The job runtime's own table: organizations stay the organizations domain's.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE job_weights (
      organization_id text PRIMARY KEY REFERENCES organizations (id) ON DELETE CASCADE,
      weight real NOT NULL CHECK (weight > 0 AND weight <= 1000),
      updated_at timestamptz NOT NULL DEFAULT now()
    )`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE job_weights');
}
