import type { Knex } from 'knex';

/**
 * What a chat turn sent its model (issue 24): the prompt's tokens, the messages kept and left out to
 * fit the model's context window, and which project knowledge was injected — written when the run
 * starts streaming, null before.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE chat_runs ADD COLUMN context jsonb');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE chat_runs DROP COLUMN context');
}
