import type { Knex } from 'knex';

/**
 * Assets (spec 2.2). The columns are the Asset of the spec one to one, plus `import_parameters`:
 * what a link import recorded about its source (served by GET /assets/{id}/imported-parameters),
 * kept apart from the user-editable `metadata`. Imported files live in object storage under a key
 * derived from the id, so no key column is needed.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE assets (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      created_by_id text NOT NULL REFERENCES users (id),
      type text NOT NULL CHECK (type IN ('image', 'video', 'audio', 'document', 'text', 'transcript', '3d')),
      title text CHECK (length(title) <= 500),
      mime_type text CHECK (length(mime_type) <= 255),
      url text CHECK (length(url) <= 4096),
      content text,
      upload_file_state text CHECK (upload_file_state IN ('in_progress', 'success', 'error')),
      enrichment_state text CHECK (enrichment_state IN ('ignored', 'pending', 'in_progress', 'success', 'error')),
      visibility text NOT NULL DEFAULT 'private' CHECK (visibility IN ('private', 'workspace', 'public')),
      workspace_role text NOT NULL DEFAULT 'viewer' CHECK (workspace_role IN ('viewer', 'editor', 'owner')),
      metadata jsonb,
      generation_id uuid,
      origin_conversation_id uuid,
      origin_canvas_id uuid,
      mod_transcript_id text,
      mod_asset_id text,
      mod_source_id text,
      dual_media_id text,
      import_parameters jsonb,
      deleted_at timestamptz,
      deleted_by_id text REFERENCES users (id),
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      CHECK ((deleted_at IS NULL) = (deleted_by_id IS NULL))
    );
    -- GET /assets: newest first per organization, keyset on (created_at, id).
    CREATE INDEX assets_list_idx ON assets (organization_id, created_at DESC, id DESC);
    CREATE INDEX assets_creator_idx ON assets (organization_id, created_by_id, created_at DESC, id DESC);
    CREATE INDEX assets_origin_conversation_idx ON assets (origin_conversation_id) WHERE origin_conversation_id IS NOT NULL;
    CREATE INDEX assets_origin_canvas_idx ON assets (origin_canvas_id) WHERE origin_canvas_id IS NOT NULL;
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE assets;');
}
