import type { Knex } from 'knex';

/** The channel run-event streams (./run-events.ts) LISTEN on. */
export const RUN_EVENTS_CHANNEL = 'chat_run_events';

/**
 * Tells every web process that a run's snapshot or state changed: small and bounded (ids and the
 * snapshot length), never the content. Inside a transaction it is delivered at commit.
 */
export const notifyRunEvent = (db: Knex | Knex.Transaction, run: { id: string; conversation_id: string }, length: number) =>
  db.raw('SELECT pg_notify(?, ?)', [RUN_EVENTS_CHANNEL, JSON.stringify({ run_id: run.id, conversation_id: run.conversation_id, length })]);
