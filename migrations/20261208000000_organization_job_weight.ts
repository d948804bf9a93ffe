import type { Knex } from 'knex';

/**
 * An organization's weight in the fair share of every queue (src/jobs/boss-sql/fair-share.ts): with
 * others active, it gets slots in proportion to it. Null: 1, like every organization; an operator (or
 * a plan) may raise it.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`ALTER TABLE organizations ADD COLUMN job_weight real CHECK (job_weight > 0 AND job_weight <= 1000)`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`ALTER TABLE organizations DROP COLUMN job_weight`);
}
