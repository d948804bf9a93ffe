import type { Knex } from 'knex';

/** Custom organization roles, members' personal settings and the credit-balance alert policy. */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE organization_roles (
      organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      key text NOT NULL CHECK (key ~ '^[a-z][a-z0-9_-]*$' AND length(key) <= 40),
      name text NOT NULL CHECK (length(name) BETWEEN 1 AND 80),
      description text CHECK (length(description) <= 500),
      permissions text[] NOT NULL DEFAULT '{}',
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (organization_id, key)
    );

    -- Keyed by the membership: leaving or being removed takes the member's settings with it.
    CREATE TABLE organization_member_personalizations (
      organization_id text NOT NULL,
      user_id text NOT NULL,
      display_name text,
      job_title text,
      timezone text,
      preferences jsonb NOT NULL DEFAULT '{}',
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (organization_id, user_id),
      FOREIGN KEY (organization_id, user_id) REFERENCES organization_members (organization_id, user_id) ON DELETE CASCADE
    );

    CREATE TABLE organization_alert_policies (
      organization_id text PRIMARY KEY REFERENCES organizations (id) ON DELETE CASCADE,
      enabled boolean NOT NULL,
      low_balance_thresholds integer[] NOT NULL,
      notify_roles text[] NOT NULL,
      extra_recipients text[] NOT NULL,
      updated_at timestamptz NOT NULL DEFAULT now(),
      updated_by_id text REFERENCES users (id)
    );

    -- Member lists page by (joined, user id) and filter by role.
    CREATE INDEX organization_members_list_idx ON organization_members (organization_id, created_at, user_id);
    CREATE INDEX organization_members_role_idx ON organization_members (organization_id, role);
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    DROP INDEX organization_members_role_idx;
    DROP INDEX organization_members_list_idx;
    DROP TABLE organization_alert_policies;
    DROP TABLE organization_member_personalizations;
    DROP TABLE organization_roles;
  `);
}
