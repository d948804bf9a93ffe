import type { Knex } from 'knex';

/**
 * Generations: an image, audio, video or text made by a model for a member, billed as a metered
 * call (`call_id`: its hold, its settle) and run by a worker. The produced files become assets
 * (`assets.generation_id`), inserted in the same transaction that captures the credits, so a
 * retried job never makes a second asset or a second capture.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE generations (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      created_by_id text NOT NULL REFERENCES users (id),
      kind text NOT NULL CHECK (kind IN ('image', 'audio', 'video', 'text')),
      model text NOT NULL REFERENCES generation_models (id),
      prompt text NOT NULL CHECK (length(prompt) BETWEEN 1 AND 8000),
      parameters jsonb NOT NULL DEFAULT '{}',
      title text CHECK (length(title) <= 300),
      status text NOT NULL DEFAULT 'queued' CHECK (status IN ('queued', 'running', 'succeeded', 'failed', 'canceled')),
      progress real CHECK (progress BETWEEN 0 AND 1),
      conversation_id uuid,
      canvas_id uuid,
      project_id uuid,
      call_id uuid NOT NULL UNIQUE REFERENCES metered_calls (id),
      quoted_credits integer NOT NULL CHECK (quoted_credits > 0),
      max_credits integer,
      credits_charged integer,
      asset_ids uuid[] NOT NULL DEFAULT '{}',
      sandbox boolean,
      error jsonb,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      started_at timestamptz,
      finished_at timestamptz,
      CHECK ((status IN ('queued', 'running')) = (finished_at IS NULL))
    );
    CREATE INDEX generations_org_idx ON generations (organization_id, created_at DESC, id DESC);
    CREATE INDEX generations_conversation_idx ON generations (conversation_id) WHERE conversation_id IS NOT NULL;
    CREATE INDEX assets_generation_idx ON assets (generation_id) WHERE generation_id IS NOT NULL;
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX assets_generation_idx; DROP TABLE generations;');
}
