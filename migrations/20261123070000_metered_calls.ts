import type { Knex } from 'knex';

/**
 * Metered calls: one row per billed read (a social operation, a web search, a page read), from the
 * request that accepted it to the settle that captured or released its hold. The row is the unit
 * of "exactly once": whoever settles it (the worker with a result, the web process on a timeout or
 * a client that hung up) locks it first, and only a call still `queued` or `running` can settle.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE metered_calls (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      user_id text NOT NULL REFERENCES users (id),
      operation text NOT NULL,
      input jsonb NOT NULL,
      status text NOT NULL DEFAULT 'queued'
        CHECK (status IN ('queued', 'running', 'succeeded', 'failed', 'canceled', 'refused')),
      quoted_credits integer NOT NULL CHECK (quoted_credits > 0),
      quoted_pages integer NOT NULL CHECK (quoted_pages > 0),
      max_credits integer,
      tool_call_id text,
      conversation_id uuid,
      message_id uuid,
      -- With run_lock: the chat run that held the conversation's lock when the call was accepted; the
      -- result is captured only if that run still holds it.
      run_lock boolean NOT NULL DEFAULT false,
      chat_run_id uuid,
      request_id text,
      result jsonb,
      pages integer,
      credits_charged integer,
      error jsonb,
      created_at timestamptz NOT NULL DEFAULT now(),
      started_at timestamptz,
      finished_at timestamptz,
      CHECK ((status IN ('queued', 'running')) = (finished_at IS NULL)),
      CHECK (status <> 'succeeded' OR (result IS NOT NULL AND credits_charged IS NOT NULL))
    );
    CREATE INDEX metered_calls_org_idx ON metered_calls (organization_id, created_at DESC, id DESC);
    CREATE INDEX metered_calls_open_idx ON metered_calls (created_at) WHERE finished_at IS NULL;
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE metered_calls');
}
