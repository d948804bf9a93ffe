import type { Knex } from 'knex';

/**
 * A generation's job at its provider (a prediction's id), recorded as soon as the provider accepted
 * it: the generation's job then waits for it as a continuation (src/jobs/waits.ts) and each later
 * attempt resumes polling that prediction instead of starting another; the provider's webhook finds
 * the generation by it to wake its job early.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    ALTER TABLE generations ADD COLUMN upstream_job_id text;
    CREATE INDEX generations_upstream_job_id ON generations (upstream_job_id) WHERE upstream_job_id IS NOT NULL;
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE generations DROP COLUMN upstream_job_id');
}
