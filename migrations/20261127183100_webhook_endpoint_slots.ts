import type { Knex } from 'knex';

/**
 * The per-endpoint delivery limit, made exact: an endpoint has ENDPOINT_CONCURRENCY slot rows
 * (created by the first delivery that needs them), and an attempt sends only while it holds one —
 * claimed with FOR UPDATE SKIP LOCKED in a short transaction, released when the POST ends, and free
 * again by itself at `held_until` should its worker die (src/webhooks/slots.ts).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE webhook_endpoint_slots (
      endpoint_id uuid NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
      slot smallint NOT NULL CHECK (slot >= 0),
      -- The attempt holding it (its job id and retry count), null when free.
      holder text,
      held_until timestamptz,
      PRIMARY KEY (endpoint_id, slot),
      CHECK ((holder IS NULL) = (held_until IS NULL))
    )
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE webhook_endpoint_slots');
}
