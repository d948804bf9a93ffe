import type { Knex } from 'knex';

/**
 * Access control (per-user grants, project membership, chat/canvas → asset references) and the
 * two resources the access domain owns: projects and canvases. Membership and reference tables
 * carry no foreign key to assets, conversations or skills: those tables come from other
 * migrations, and the access module checks existence at request time.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE projects (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      created_by_id text NOT NULL REFERENCES users (id),
      slug text NOT NULL CHECK (length(slug) <= 80 AND slug ~ '^[a-z0-9]+(-[a-z0-9]+)*$'),
      title text NOT NULL CHECK (length(title) BETWEEN 1 AND 200),
      emoji text CHECK (length(emoji) <= 16),
      description text CHECK (length(description) <= 5000),
      visibility text NOT NULL DEFAULT 'private' CHECK (visibility IN ('private', 'workspace', 'public')),
      workspace_role text NOT NULL DEFAULT 'viewer' CHECK (workspace_role IN ('viewer', 'editor', 'owner')),
      knowledge_skill_id uuid,
      mod_source_id text,
      metadata jsonb,
      deleted_at timestamptz,
      deleted_by_id text REFERENCES users (id),
      archived_at timestamptz,
      archived_by_id text REFERENCES users (id),
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      CHECK ((deleted_at IS NULL) = (deleted_by_id IS NULL)),
      CHECK ((archived_at IS NULL) = (archived_by_id IS NULL))
    );
    -- A slug names one project per organization (kept while soft-deleted, so restore cannot collide).
    CREATE UNIQUE INDEX projects_slug_key ON projects (organization_id, slug);
    CREATE INDEX projects_list_idx ON projects (organization_id, created_at DESC, id DESC);

    CREATE TABLE canvases (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      created_by_id text NOT NULL REFERENCES users (id),
      title text CHECK (length(title) <= 300),
      visibility text NOT NULL DEFAULT 'private' CHECK (visibility IN ('private', 'workspace', 'public')),
      workspace_role text NOT NULL DEFAULT 'viewer' CHECK (workspace_role IN ('viewer', 'editor', 'owner')),
      -- The project the canvas was created in (membership itself lives in project_items).
      project_id uuid REFERENCES projects (id),
      deleted_at timestamptz,
      deleted_by_id text REFERENCES users (id),
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      CHECK ((deleted_at IS NULL) = (deleted_by_id IS NULL))
    );
    CREATE INDEX canvases_list_idx ON canvases (organization_id, created_at DESC, id DESC);

    CREATE TABLE resource_grants (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      resource_type text NOT NULL CHECK (resource_type IN ('asset', 'chat_conversation', 'canvas', 'project', 'scheduled_task', 'skill')),
      resource_id uuid NOT NULL,
      user_id text NOT NULL REFERENCES users (id),
      role text NOT NULL CHECK (role IN ('viewer', 'editor')),
      granted_by_id text REFERENCES users (id),
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      UNIQUE (resource_type, resource_id, user_id)
    );
    -- "What was shared with me": the readable-by predicate probes (type, id, user) through the unique index.
    CREATE INDEX resource_grants_user_idx ON resource_grants (user_id, resource_type);

    -- Which assets, canvases, conversations and skills a project holds; via = origin when the
    -- item was created in the project, reference when it was added afterwards.
    CREATE TABLE project_items (
      project_id uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
      item_type text NOT NULL CHECK (item_type IN ('asset', 'canvas', 'chat_conversation', 'skill')),
      item_id uuid NOT NULL,
      via text NOT NULL DEFAULT 'reference' CHECK (via IN ('origin', 'reference')),
      added_by_id text REFERENCES users (id),
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (project_id, item_type, item_id)
    );
    CREATE INDEX project_items_item_idx ON project_items (item_type, item_id);
    CREATE INDEX project_items_list_idx ON project_items (project_id, item_type, created_at DESC, item_id DESC);

    -- A chat or canvas that uses an asset it did not create: its audience may view the asset.
    CREATE TABLE resource_references (
      from_type text NOT NULL CHECK (from_type IN ('chat_conversation', 'canvas')),
      from_id uuid NOT NULL,
      asset_id uuid NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (from_type, from_id, asset_id)
    );
    CREATE INDEX resource_references_asset_idx ON resource_references (asset_id);
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE resource_references; DROP TABLE project_items; DROP TABLE resource_grants; DROP TABLE canvases; DROP TABLE projects;');
}
