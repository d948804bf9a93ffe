import type { Knex } from 'knex';

/** Who answered a tool call's approval, and when (issue 36): the run's record says it, as the activity feed does. */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    ALTER TABLE chat_tool_calls ADD COLUMN decided_by_id text, ADD COLUMN decided_at timestamptz;
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`ALTER TABLE chat_tool_calls DROP COLUMN decided_by_id, DROP COLUMN decided_at;`);
}
