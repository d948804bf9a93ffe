import type { Knex } from 'knex';
import { expireHold, postPendingCapture } from './hold-resolutions.ts';
import { expireGrant } from './ledger.ts';
import { inTransaction } from '../db/transaction.ts';

const BATCH = 200;

/**
 * Expires every overdue open hold, one transaction each. Safe to run on several workers at once:
 * each hold is re-checked under its row lock, so it is expired exactly once. First, open holds with
 * a final capture pending (decided by a commit whose worker died before posting it, or about to be
 * posted right now) have it posted, overdue or not: such a hold is never released unused.
 */
export async function expireDueHolds(db: Knex): Promise<number> {
  for (;;) {
    const pending = await db('credit_holds').where({ status: 'held' }).whereNotNull('pending_capture').orderBy('expires_at').limit(BATCH).pluck('id');
    for (const id of pending) await postPendingCapture(db, id as string);
    if (pending.length < BATCH) break;
  }
  let expired = 0;
  for (;;) {
    const due = await db('credit_holds').where({ status: 'held' }).where('expires_at', '<=', db.fn.now()).orderBy('expires_at').limit(BATCH).pluck('id');
    for (const id of due) if (await inTransaction(db, (trx) => expireHold(trx, id as string))) expired++;
    if (due.length < BATCH) return expired;
  }
}

/** Expires what is left of every grant past its time; each grant exactly once (see `expireGrant`). */
export async function expireDueGrants(db: Knex): Promise<number> {
  let expired = 0;
  for (;;) {
    const due = await db('credit_grants')
      .whereNull('expired_at')
      .whereNotNull('expires_at')
      .where('expires_at', '<=', db.fn.now())
      .orderBy('expires_at')
      .limit(BATCH)
      .pluck('id');
    for (const id of due) {
      await inTransaction(db, (trx) => expireGrant(trx, id as string));
      expired++;
    }
    if (due.length < BATCH) return expired;
  }
}
