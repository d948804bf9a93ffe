import type { Knex } from 'knex';

/**
 * Connectors (organization-level settings: what to reach and how it authenticates) and each
 * user's own credential for one, encrypted at rest (AES-256-GCM; `key_id` names the key, so keys
 * can rotate: src/connectors/reencrypt.ts).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE connectors (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      type text NOT NULL CHECK (type IN ('http', 'mcp', 'openapi')),
      name text NOT NULL CHECK (length(name) BETWEEN 1 AND 120),
      url text CHECK (length(url) <= 2048),
      auth_scheme text NOT NULL DEFAULT 'none' CHECK (auth_scheme IN ('none', 'bearer', 'header', 'basic')),
      created_by_id text REFERENCES users (id),
      deleted_at timestamptz,
      deleted_by_id text REFERENCES users (id),
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    );
    -- A live connector's name is unique in its organization (409 on create and rename).
    CREATE UNIQUE INDEX connectors_org_name_key ON connectors (organization_id, lower(name)) WHERE deleted_at IS NULL;
    -- GET /connectors and /connector-credentials: newest first per organization, keyset on (created_at, id).
    CREATE INDEX connectors_list_idx ON connectors (organization_id, created_at DESC, id DESC);

    CREATE TABLE connector_credentials (
      connector_id uuid NOT NULL REFERENCES connectors (id) ON DELETE CASCADE,
      user_id text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
      ciphertext bytea NOT NULL,
      iv bytea NOT NULL CHECK (length(iv) = 12),
      auth_tag bytea NOT NULL CHECK (length(auth_tag) = 16),
      key_id text NOT NULL,
      last4 text,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (connector_id, user_id)
    );
    -- The re-encrypt command walks the rows not yet under the current key.
    CREATE INDEX connector_credentials_key_idx ON connector_credentials (key_id);
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE connector_credentials; DROP TABLE connectors;');
}
