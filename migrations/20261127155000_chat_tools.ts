import type { Knex } from 'knex';

/**
 * Tool calls in chat turns (issue 24): assistant messages carry the tool calls the model asked for,
 * tool results are messages of role `tool` naming the call they answer; a run records what it may
 * offer (`tools`), where its own messages end (`tail_message_id`, the answer goes under it) and the
 * model usage of its finished rounds; each tool call is a row with its status, result and credits;
 * an MCP connector's tool list is cached per user (it depends on the user's credential). A
 * connector may need approval for its tools: the turn then waits for the caller's answer.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    ALTER TABLE conversation_messages
      ADD COLUMN tool_calls jsonb,
      ADD COLUMN tool_call_id text;
    ALTER TABLE chat_runs
      ADD COLUMN tools jsonb,
      ADD COLUMN tail_message_id uuid REFERENCES conversation_messages (id) ON DELETE SET NULL,
      ADD COLUMN rounds_usage jsonb NOT NULL DEFAULT '{"input_tokens": 0, "output_tokens": 0}',
      -- Set while the turn waits for the caller to approve or reject tool calls (it ends unanswered then).
      ADD COLUMN awaiting_approval_until timestamptz;
    ALTER TABLE connectors ADD COLUMN needs_approval boolean NOT NULL DEFAULT false;
    CREATE TABLE chat_tool_calls (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      run_id uuid NOT NULL REFERENCES chat_runs (id) ON DELETE CASCADE,
      -- The model's id of the call (what the tool message answers; a model may reuse one in a later round).
      tool_call_id text NOT NULL,
      round integer NOT NULL,
      position integer NOT NULL,
      name text NOT NULL,
      arguments text NOT NULL,
      status text NOT NULL DEFAULT 'running' CHECK (status IN ('running', 'awaiting_approval', 'succeeded', 'failed')),
      -- A call of a tool that needs approval: null until the caller answers, then whether they approved it.
      approved boolean,
      result text,
      credits integer NOT NULL DEFAULT 0,
      -- The metered call that bills it (chosen before it is accepted, so a retried attempt waits for it instead of paying twice).
      metered_call_id uuid,
      message_id uuid REFERENCES conversation_messages (id) ON DELETE SET NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      finished_at timestamptz,
      UNIQUE (run_id, round, position)
    );
    CREATE INDEX chat_tool_calls_run_idx ON chat_tool_calls (run_id, round, position);
    CREATE TABLE connector_tool_lists (
      connector_id uuid NOT NULL REFERENCES connectors (id) ON DELETE CASCADE,
      user_id text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
      tools jsonb NOT NULL,
      refreshed_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (connector_id, user_id)
    );
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    DROP TABLE connector_tool_lists;
    DROP TABLE chat_tool_calls;
    ALTER TABLE connectors DROP COLUMN needs_approval;
    ALTER TABLE chat_runs DROP COLUMN awaiting_approval_until, DROP COLUMN rounds_usage, DROP COLUMN tail_message_id, DROP COLUMN tools;
    ALTER TABLE conversation_messages DROP COLUMN tool_call_id, DROP COLUMN tool_calls;
  `);
}
