import type { Knex } from 'knex';

/**
 * Runs `work` in a transaction, joining the caller's when `db` already is one — so a service can be
 * called on its own (it opens a transaction) or as one step of a larger one (a job's fenced step,
 * a route's unit of work) and then commits or rolls back with it, never half-way.
 */
export function inTransaction<T>(db: Knex | Knex.Transaction, work: (trx: Knex.Transaction) => Promise<T>): Promise<T> {
  return isTransaction(db) ? work(db) : db.transaction(work);
}

export const isTransaction = (db: Knex | Knex.Transaction): db is Knex.Transaction => (db as Knex.Transaction).isTransaction === true;
