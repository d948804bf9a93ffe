import type { Knex } from 'knex';
import { notify } from '../db/notifications.ts';

/** The channel run-event streams (./run-events.ts) LISTEN on. */
export const RUN_EVENTS_CHANNEL = 'chat_run_events';

/**
 * Tells every web process that a run's snapshot or state changed, keyed by conversation: small and
 * bounded (ids and the snapshot length), never the content. Inside a transaction it is delivered at commit.
 */
export const notifyRunEvent = (db: Knex | Knex.Transaction, run: { id: string; conversation_id: string }, length: number) =>
  notify(db, RUN_EVENTS_CHANNEL, run.conversation_id, { run_id: run.id, length });
