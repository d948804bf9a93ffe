import type { Knex } from 'knex';

/**
 * Idempotency keys are stored as the SHA-256 of the key (hex), never the key itself: clients put
 * e-mail addresses and other personal data in keys, and the table is read by operators. Existing
 * rows are hashed in place, so their retries keep replaying.
 *
 * A key is also recorded before its request runs (the request's answer may come from a job, which
 * no single transaction can wait for): `response_status` is null while the request is in progress
 * and `locked_until` is how long it may still be running.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    ALTER TABLE idempotency_keys ADD COLUMN key_hash text;
    UPDATE idempotency_keys SET key_hash = encode(sha256(convert_to(key, 'UTF8')), 'hex');
    ALTER TABLE idempotency_keys DROP CONSTRAINT idempotency_keys_pkey;
    ALTER TABLE idempotency_keys DROP COLUMN key;
    ALTER TABLE idempotency_keys ALTER COLUMN key_hash SET NOT NULL;
    ALTER TABLE idempotency_keys ADD CONSTRAINT idempotency_keys_key_hash_check CHECK (key_hash ~ '^[0-9a-f]{64}$');
    ALTER TABLE idempotency_keys ADD PRIMARY KEY (organization_id, user_id, key_hash);
    ALTER TABLE idempotency_keys ALTER COLUMN response_status DROP NOT NULL;
    ALTER TABLE idempotency_keys ADD COLUMN locked_until timestamptz;
    ALTER TABLE idempotency_keys ADD CONSTRAINT idempotency_keys_state_check CHECK ((response_status IS NULL) = (locked_until IS NOT NULL));
  `);
}

/**
 * The raw keys are gone for good: rows keep their hash in `key`, which no client sends, so they
 * simply stop matching (a retry after the rollback runs as a new request) and expire; migrating up
 * again hashes that value once more, so they stay unmatched until they expire. Requests in progress
 * have no answer the old code could replay: their rows are dropped.
 */
export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    DELETE FROM idempotency_keys WHERE response_status IS NULL;
    ALTER TABLE idempotency_keys DROP CONSTRAINT idempotency_keys_state_check;
    ALTER TABLE idempotency_keys DROP COLUMN locked_until;
    ALTER TABLE idempotency_keys ALTER COLUMN response_status SET NOT NULL;
    ALTER TABLE idempotency_keys DROP CONSTRAINT idempotency_keys_pkey;
    ALTER TABLE idempotency_keys DROP CONSTRAINT idempotency_keys_key_hash_check;
    ALTER TABLE idempotency_keys RENAME COLUMN key_hash TO key;
    ALTER TABLE idempotency_keys ADD PRIMARY KEY (organization_id, user_id, key);
  `);
}
