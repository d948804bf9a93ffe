import type { Knex } from 'knex';
import { notify } from '../db/notifications.ts';

/** Web processes waiting for a call's answer listen here, keyed by call id. */
export const METERED_CALLS_CHANNEL = 'metered_calls';

/** Sent in the settling transaction: delivered at its commit, when the answer is readable. */
export const notifyCallSettled = (trx: Knex.Transaction, callId: string) => notify(trx, METERED_CALLS_CHANNEL, callId);
