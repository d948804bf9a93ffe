import type { Knex } from 'knex';

/** Custom skills (spec 2.5) and their version history: every change is a new numbered version. */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE EXTENSION IF NOT EXISTS pg_trgm;

    CREATE TABLE skills (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      codename text,
      -- null only for built-in and community skills, which belong to no organization.
      organization_id text REFERENCES organizations (id) ON DELETE CASCADE,
      source text NOT NULL DEFAULT 'custom' CHECK (source IN ('built-in', 'custom', 'community')),
      name text NOT NULL CHECK (length(name) BETWEEN 1 AND 120),
      description text NOT NULL CHECK (length(description) <= 2000),
      body text NOT NULL CHECK (length(body) <= 200000),
      files jsonb,
      author text,
      -- The project the skill was created in (no FK: projects live in another domain's migration).
      project_id uuid,
      project_scoped boolean NOT NULL DEFAULT false,
      visibility text NOT NULL DEFAULT 'private' CHECK (visibility IN ('private', 'workspace', 'public')),
      workspace_role text NOT NULL DEFAULT 'viewer' CHECK (workspace_role IN ('viewer', 'editor', 'owner')),
      created_by_id text REFERENCES users (id),
      mod_shortcut_id text,
      listing_id uuid,
      listing_version integer,
      listing_edited_at timestamptz,
      current_version integer NOT NULL DEFAULT 1,
      deleted_at timestamptz,
      deleted_by_id text REFERENCES users (id),
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      CHECK (source <> 'custom' OR organization_id IS NOT NULL)
    );
    -- A live custom skill's name is unique in its organization (409 on create, rename, restore).
    CREATE UNIQUE INDEX skills_org_name_key ON skills (organization_id, lower(name)) WHERE deleted_at IS NULL;
    -- GET /skills: newest first per organization, keyset on (created_at, id).
    CREATE INDEX skills_list_idx ON skills (organization_id, created_at DESC, id DESC);
    CREATE INDEX skills_name_trgm_idx ON skills USING gin (lower(name) gin_trgm_ops);

    CREATE TABLE skill_versions (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      skill_id uuid NOT NULL REFERENCES skills (id) ON DELETE CASCADE,
      version integer NOT NULL CHECK (version >= 1),
      name text NOT NULL,
      description text NOT NULL,
      body text NOT NULL,
      files jsonb,
      -- Set when the version was made by restoring an earlier one.
      restored_from_version integer,
      created_by_id text REFERENCES users (id),
      created_at timestamptz NOT NULL DEFAULT now(),
      UNIQUE (skill_id, version)
    );
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE skill_versions; DROP TABLE skills;');
}
