import type { Knex } from 'knex';

/**
 * The job console's webhook panel shows each failing or disabled endpoint's latest failed attempt:
 * an endpoint's attempted deliveries, newest attempt first, without reading the ones never tried
 * nor those that succeeded or were skipped.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE INDEX webhook_deliveries_attempted_idx ON webhook_deliveries (endpoint_id, last_attempt_at DESC)
      WHERE last_attempt_at IS NOT NULL AND status IN ('pending', 'failed')
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX webhook_deliveries_attempted_idx');
}
