import type { Knex } from 'knex';

/** Web processes waiting for a call's answer listen here, keyed by call id. */
export const METERED_CALLS_CHANNEL = 'metered_calls';

/**
 * The call's settle notification, as a column of the statement that settles it (`RETURNING …,
 * <this>`: no round trip of its own), with `notify`'s payload (`{"key": <call id>}`). Sent in the
 * settling transaction, it is delivered at its commit, when the answer is readable.
 */
export const callSettledNotice = (db: Knex, callId: string) => db.raw('pg_notify(?, ?) AS notified', [METERED_CALLS_CHANNEL, JSON.stringify({ key: callId })]);
