import type { Knex } from 'knex';

/**
 * Chat settings that outlive one turn (issue 24): a conversation's own skill (system context beside
 * its projects' knowledge), the tools its turns may offer and those whose calls wait for approval in
 * it; a project's tools for the turns of its conversations (null: no narrowing); and the tools of a
 * connector that need approval one by one (beside `needs_approval`, which marks all of them).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    ALTER TABLE conversations
      ADD COLUMN skill_id uuid REFERENCES skills (id) ON DELETE SET NULL,
      ADD COLUMN tools jsonb,
      ADD COLUMN approval_tools jsonb NOT NULL DEFAULT '[]';
    -- A deleted skill clears it from its conversations: found by this index, not a scan.
    CREATE INDEX conversations_skill_i ON conversations (skill_id) WHERE skill_id IS NOT NULL;
    ALTER TABLE projects ADD COLUMN chat_tools jsonb;
    ALTER TABLE connectors ADD COLUMN approval_tools jsonb NOT NULL DEFAULT '[]';
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    ALTER TABLE connectors DROP COLUMN approval_tools;
    ALTER TABLE projects DROP COLUMN chat_tools;
    DROP INDEX conversations_skill_i;
    ALTER TABLE conversations DROP COLUMN approval_tools, DROP COLUMN tools, DROP COLUMN skill_id;
  `);
}
