import type { Knex } from 'knex';

/**
 * Idempotency keys belong to the caller who sent them, not to the whole organization: another
 * member sending the same key must not replay someone else's stored response. Keys stored before
 * this change (and rows written without one) belong to nobody, the empty user id, and simply expire.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    ALTER TABLE idempotency_keys ADD COLUMN user_id text NOT NULL DEFAULT '';
    ALTER TABLE idempotency_keys DROP CONSTRAINT idempotency_keys_pkey;
    ALTER TABLE idempotency_keys ADD PRIMARY KEY (organization_id, user_id, key);
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    DELETE FROM idempotency_keys a USING idempotency_keys b
     WHERE a.organization_id = b.organization_id AND a.key = b.key AND (a.created_at, a.user_id) > (b.created_at, b.user_id);
    ALTER TABLE idempotency_keys DROP CONSTRAINT idempotency_keys_pkey;
    ALTER TABLE idempotency_keys ADD PRIMARY KEY (organization_id, key);
    ALTER TABLE idempotency_keys DROP COLUMN user_id;
  `);
}
