import type { Knex } from 'knex';

/**
 * Recall ranks the newest matching messages of an organization (src/conversations/recall.ts): for a
 * common word, walking this index newest-first finds them without reading every match; for a rare
 * one the planner keeps using the full-text (GIN) index.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('CREATE INDEX conversation_messages_recent_idx ON conversation_messages (organization_id, created_at DESC)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX conversation_messages_recent_idx');
}
