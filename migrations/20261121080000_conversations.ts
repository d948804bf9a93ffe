import type { Knex } from 'knex';

/** Conversations (spec 2.3): the resource part; messages and runs arrive with their own migration. */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE EXTENSION IF NOT EXISTS pg_trgm;

    CREATE TABLE conversations (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      created_by_id text NOT NULL REFERENCES users (id),
      title text CHECK (length(title) <= 300),
      visibility text NOT NULL DEFAULT 'private' CHECK (visibility IN ('private', 'workspace', 'public')),
      workspace_role text NOT NULL DEFAULT 'viewer' CHECK (workspace_role IN ('viewer', 'editor', 'owner')),
      -- The project the conversation was started in (no FK: projects live in another domain's migration).
      project_id uuid,
      active_leaf_id uuid,
      schedule_id uuid,
      forked_from_conversation_id uuid REFERENCES conversations (id),
      message_count integer NOT NULL DEFAULT 0 CHECK (message_count >= 0),
      last_message_at timestamptz,
      active_run_id text,
      active_run_at timestamptz,
      active_workflow_run_id text,
      mod_conversation_id text,
      deleted_at timestamptz,
      deleted_by_id text REFERENCES users (id),
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      CHECK ((deleted_at IS NULL) = (deleted_by_id IS NULL))
    );
    -- GET /conversations: newest first per organization, resumed by (created_at, id) keyset.
    CREATE INDEX conversations_list_idx ON conversations (organization_id, created_at DESC, id DESC);
    -- filter=mine / created_by.
    CREATE INDEX conversations_creator_idx ON conversations (organization_id, created_by_id, created_at DESC, id DESC);
    -- search: case-insensitive substring match on the title.
    CREATE INDEX conversations_title_trgm_idx ON conversations USING gin (lower(title) gin_trgm_ops);
    CREATE INDEX conversations_project_idx ON conversations (project_id) WHERE project_id IS NOT NULL;
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE conversations;');
}
