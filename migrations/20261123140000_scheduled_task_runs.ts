import type { Knex } from 'knex';

/**
 * Runs of scheduled tasks: one per slot the dispatcher claimed (unique per task and slot, so any
 * number of workers fire a slot once), or per trigger. A run performs one chat run in a
 * conversation of its own (`conversations.schedule_id`) and mails the answer.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE scheduled_task_runs (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      task_id uuid NOT NULL REFERENCES scheduled_tasks (id) ON DELETE CASCADE,
      organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      trigger text NOT NULL CHECK (trigger IN ('schedule', 'manual', 'one_off')),
      -- The slot (schedule) or the moment it was asked for (manual, one_off).
      scheduled_for timestamptz NOT NULL,
      -- Slots missed while no dispatcher ran, folded into this one run (never a storm of catch-up runs).
      missed_slots integer NOT NULL DEFAULT 0 CHECK (missed_slots >= 0),
      state text NOT NULL DEFAULT 'queued' CHECK (state IN ('queued', 'running', 'succeeded', 'failed', 'canceled', 'skipped')),
      prompt text NOT NULL,
      model text,
      email_recipients text[] NOT NULL DEFAULT '{}',
      max_credits integer,
      requested_by_id text REFERENCES users (id),
      conversation_id uuid,
      chat_run_id uuid,
      credits_used integer,
      error jsonb,
      created_at timestamptz NOT NULL DEFAULT now(),
      started_at timestamptz,
      finished_at timestamptz,
      CHECK ((state IN ('queued', 'running')) = (finished_at IS NULL))
    );
    CREATE UNIQUE INDEX scheduled_task_runs_slot_idx ON scheduled_task_runs (task_id, scheduled_for) WHERE trigger = 'schedule';
    CREATE INDEX scheduled_task_runs_org_idx ON scheduled_task_runs (organization_id, created_at DESC, id DESC);
    CREATE INDEX scheduled_task_runs_task_idx ON scheduled_task_runs (task_id, created_at DESC, id DESC);
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE scheduled_task_runs');
}
