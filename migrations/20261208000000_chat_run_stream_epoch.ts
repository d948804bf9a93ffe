import type { Knex } from 'knex';

/**
 * A run's stream epoch: bumped whenever its snapshot is replaced rather than extended (a new round
 * of the turn, a retried attempt), so `<epoch>.<length>` names a point of the streamed text exactly
 * (the run-event stream's event ids, resumed with Last-Event-ID), and a writer still appending to
 * an older epoch changes nothing.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE chat_runs ADD COLUMN stream_epoch integer NOT NULL DEFAULT 0');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE chat_runs DROP COLUMN stream_epoch');
}
