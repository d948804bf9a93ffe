import type { Knex } from 'knex';

/**
 * Resumable direct uploads (tus, src/assets/uploads): one row per upload, created with its asset.
 * The bytes live in the tus store under `id` until the upload is finished (moved to the asset's
 * file) or ends otherwise (removed). `size` counts against the organization's storage limit from
 * creation, so an organization cannot reserve more than it may store by starting many uploads.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE asset_uploads (
      -- The tus upload id: random, and the last segment of the upload URL.
      id text PRIMARY KEY,
      asset_id uuid NOT NULL UNIQUE REFERENCES assets(id) ON DELETE CASCADE,
      organization_id text NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
      -- Only this user may send bytes to it (the upload URL is no capability by itself).
      created_by_id text NOT NULL,
      filename text NOT NULL,
      mime_type text NOT NULL,
      size bigint NOT NULL CHECK (size >= 0),
      checksum_sha256 text CHECK (checksum_sha256 ~ '^[0-9a-f]{64}$'),
      -- 'local' (tus FileStore under DATA_DIR) or 's3' (tus S3Store): where the bytes wait.
      store text NOT NULL CHECK (store IN ('local', 's3')),
      state text NOT NULL DEFAULT 'in_progress' CHECK (state IN ('in_progress', 'completed', 'failed', 'expired', 'canceled')),
      -- Why it ended other than completed ({code, message}).
      error jsonb,
      -- What the finished bytes hashed to (the ETag of the stored file).
      sha256 text,
      expires_at timestamptz NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      ended_at timestamptz,
      -- When the tus store's copy was removed (after it ended: kept as the asset's file, or thrown away).
      -- Ended uploads without it are swept by the cleanup job, so a crash between the two leaves no bytes behind.
      staging_removed_at timestamptz,
      CHECK ((state = 'in_progress') = (ended_at IS NULL))
    );
    -- The cleanup job's scan: open uploads by expiry.
    CREATE INDEX asset_uploads_open_by_expiry ON asset_uploads (expires_at) WHERE state = 'in_progress';
    CREATE INDEX asset_uploads_staging_left ON asset_uploads (ended_at) WHERE state <> 'in_progress' AND staging_removed_at IS NULL;
    -- The storage limit's sum per organization.
    CREATE INDEX asset_uploads_by_organization ON asset_uploads (organization_id) WHERE state IN ('in_progress', 'completed');
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE asset_uploads');
}
