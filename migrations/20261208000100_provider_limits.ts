import type { Knex } from 'knex';

/**
 * Provider limits across the fleet (src/providers/limits.ts): a call to a limited provider runs
 * while it holds one of the provider's slot rows (claimed and freed by one statement each, so no
 * connection is held while it waits on the upstream; a lease frees the slot of a worker that died);
 * its calls per minute are counted in a row per minute; and a 429's Retry-After stops every call
 * to it until then.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE provider_slots (
      provider text NOT NULL,
      slot integer NOT NULL,
      holder text,
      held_until timestamptz,
      PRIMARY KEY (provider, slot)
    );
    CREATE TABLE provider_minutes (
      provider text NOT NULL,
      minute timestamptz NOT NULL,
      calls integer NOT NULL,
      PRIMARY KEY (provider, minute)
    );
    CREATE TABLE provider_backoffs (
      provider text PRIMARY KEY,
      until timestamptz NOT NULL
    );
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`DROP TABLE provider_backoffs; DROP TABLE provider_minutes; DROP TABLE provider_slots;`);
}
