import type { Knex } from 'knex';

/** Chat runs: one turn of a conversation answered by a worker, holding the conversation's run lock. */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE chat_runs (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      conversation_id uuid NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
      organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      user_id text NOT NULL REFERENCES users (id),
      model text NOT NULL,
      -- The message answered; the assistant message is appended under it.
      message_id uuid REFERENCES conversation_messages (id) ON DELETE SET NULL,
      status text NOT NULL DEFAULT 'queued' CHECK (status IN ('queued', 'running', 'succeeded', 'failed', 'stopped')),
      max_credits integer,
      hold_id uuid,
      snapshot text NOT NULL DEFAULT '',
      heartbeat_at timestamptz,
      answer_message_id uuid REFERENCES conversation_messages (id) ON DELETE SET NULL,
      -- Set once, in the transaction that captures the run's credits: the run is finished.
      credits_charged integer,
      error jsonb,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX chat_runs_conversation_idx ON chat_runs (conversation_id, created_at DESC, id DESC);
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE chat_runs');
}
