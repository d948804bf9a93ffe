import type { Knex } from 'knex';
import type { CallRow } from './calls.ts';

/** Web processes waiting for a call's answer listen here, keyed by call id. */
export const METERED_CALLS_CHANNEL = 'metered_calls';

/**
 * The call's settle notification, as a column of the statement that settles it (`RETURNING …,
 * <this>`: no round trip of its own), with `notify`'s payload (`{"key": <call id>}`). Sent in the
 * settling transaction, it is delivered at its commit, when the answer is readable.
 */
export const callSettledNotice = (db: Knex, callId: string) => db.raw('pg_notify(?, ?) AS notified', [METERED_CALLS_CHANNEL, JSON.stringify({ key: callId })]);

/** What a waiting request needs to answer (src/metering/present.ts presentCall), carried by the notification when it fits. */
export type CallAnswer = Pick<CallRow, 'status' | 'operation' | 'result' | 'pages' | 'credits_charged' | 'error'>;

/** Postgres refuses NOTIFY payloads of 8000 bytes or more; an answer larger than this goes by its key alone (the waiter reads the row). */
const MAX_PAYLOAD_BYTES = 7_900;

/**
 * The settle notification with the call's answer in its payload (`{"key": <call id>, "call": {…}}`),
 * so the waiting request answers without reading the row back; a larger answer sends the key only.
 * As a column of the statement that commits the answer (and, for a read, its capture).
 */
export function callAnswerNotice(db: Knex, call: CallRow): Knex.Raw {
  const answer: CallAnswer = {
    status: call.status,
    operation: call.operation,
    result: call.result,
    pages: call.pages,
    credits_charged: call.credits_charged,
    error: call.error,
  };
  const full = JSON.stringify({ key: call.id, call: answer });
  const payload = Buffer.byteLength(full) < MAX_PAYLOAD_BYTES ? full : JSON.stringify({ key: call.id });
  return db.raw('pg_notify(?, ?) AS notified', [METERED_CALLS_CHANNEL, payload]);
}
