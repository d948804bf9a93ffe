import type { Knex } from 'knex';

/**
 * Scheduled tasks: a prompt run by a chat model on a cron schedule in a timezone (issue 11). An
 * access-controlled resource like the others (general access, grants; a project it names passes its
 * audience on). `next_run_at` is the next slot, null while disabled or deleted: the dispatcher
 * claims tasks by it.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE scheduled_tasks (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      created_by_id text NOT NULL REFERENCES users (id),
      title text NOT NULL CHECK (length(title) BETWEEN 1 AND 300),
      prompt text NOT NULL CHECK (length(prompt) BETWEEN 1 AND 20000),
      cron text NOT NULL CHECK (length(cron) BETWEEN 1 AND 200),
      timezone text NOT NULL CHECK (length(timezone) BETWEEN 1 AND 64),
      model text,
      skill_id uuid,
      project_id uuid,
      email_recipients text[] NOT NULL DEFAULT '{}',
      max_credits_per_run integer CHECK (max_credits_per_run > 0),
      enabled boolean NOT NULL DEFAULT true,
      next_run_at timestamptz,
      visibility text NOT NULL DEFAULT 'private' CHECK (visibility IN ('private', 'workspace', 'public')),
      workspace_role text NOT NULL DEFAULT 'viewer' CHECK (workspace_role IN ('viewer', 'editor', 'owner')),
      deleted_at timestamptz,
      deleted_by_id text REFERENCES users (id),
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      CHECK ((deleted_at IS NULL) = (deleted_by_id IS NULL))
    );
    CREATE INDEX scheduled_tasks_list_idx ON scheduled_tasks (organization_id, created_at DESC, id DESC);
    -- The dispatcher's claim: due, live, enabled tasks.
    CREATE INDEX scheduled_tasks_due_idx ON scheduled_tasks (next_run_at) WHERE next_run_at IS NOT NULL AND deleted_at IS NULL AND enabled;
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE scheduled_tasks');
}
