import type { Knex } from 'knex';

/**
 * A scheduled run's lifecycle column is `status`, as generations' and chat runs' are (CONVENTIONS
 * §4): one word for the same idea across the API. The CHECKs and rows follow the rename.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE scheduled_task_runs RENAME COLUMN state TO status');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE scheduled_task_runs RENAME COLUMN status TO state');
}
