import type { Knex } from 'knex';

/** Organizations (tenancy), their members with a role, custom roles and the activity feed. */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE organizations (
      id text PRIMARY KEY DEFAULT gen_random_uuid()::text,
      name text NOT NULL CHECK (length(name) BETWEEN 1 AND 120),
      slug text NOT NULL CHECK (length(slug) <= 48 AND slug ~ '^[a-z0-9]+(-[a-z0-9]+)*$'),
      logo_key text,
      logo_content_type text,
      logo_updated_at timestamptz,
      onboarded_at timestamptz,
      created_by_id text NOT NULL REFERENCES users (id),
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      deleted_at timestamptz,
      deleted_by_id text REFERENCES users (id)
    );
    -- A slug stays taken while its organization is soft-deleted (it can be restored).
    CREATE UNIQUE INDEX organizations_slug_key ON organizations (slug);

    CREATE TABLE organization_members (
      organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      user_id text NOT NULL REFERENCES users (id),
      role text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (organization_id, user_id)
    );
    CREATE INDEX organization_members_user_idx ON organization_members (user_id);

    CREATE TABLE activity_events (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      actor_id text REFERENCES users (id),
      action text NOT NULL,
      subject_type text NOT NULL,
      subject_id text,
      data jsonb NOT NULL DEFAULT '{}',
      created_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX activity_events_feed_idx ON activity_events (organization_id, created_at DESC, id DESC);
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE activity_events; DROP TABLE organization_members; DROP TABLE organizations;');
}
