import type { Knex } from 'knex';

/** Messages of a conversation as a tree (branches by parent), with full-text search for recall. */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE conversation_messages (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      conversation_id uuid NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
      -- Denormalised from the conversation so recall scopes to one organization before joining.
      organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      parent_id uuid REFERENCES conversation_messages (id) ON DELETE CASCADE,
      role text NOT NULL CHECK (role IN ('user', 'assistant', 'system', 'tool')),
      content text NOT NULL,
      created_by_id text REFERENCES users (id),
      credits integer,
      metadata jsonb,
      created_at timestamptz NOT NULL DEFAULT now(),
      search tsvector GENERATED ALWAYS AS (to_tsvector('english', content)) STORED
    );
    -- Siblings of a parent in order (sibling_count / sibling_index), and the children of a message.
    CREATE INDEX conversation_messages_tree_idx ON conversation_messages (conversation_id, parent_id, created_at, id);
    -- Recall: websearch_to_tsquery against the stored vector.
    CREATE INDEX conversation_messages_search_idx ON conversation_messages USING gin (search);

    ALTER TABLE conversations
      ADD CONSTRAINT conversations_active_leaf_fk FOREIGN KEY (active_leaf_id) REFERENCES conversation_messages (id) ON DELETE SET NULL;
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    ALTER TABLE conversations DROP CONSTRAINT conversations_active_leaf_fk;
    DROP TABLE conversation_messages;
  `);
}
