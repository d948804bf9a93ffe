import type { Knex } from 'knex';

/**
 * A chat turn is a metered call (operation `chat_run`, the call's id the run's id), so it holds,
 * captures and releases through the one settle path every metered read and generation uses. Its
 * hold keeps the run's id as its `run_id` — what clients filter /credits/transactions by — so the
 * call names its hold's run id when it is not the default `metered-call:<call id>`.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`ALTER TABLE metered_calls ADD COLUMN hold_run_id text`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`ALTER TABLE metered_calls DROP COLUMN hold_run_id`);
}
