import type { Knex } from 'knex';

// Organizations and members come from the shared test support.
export { addMember, createOrganization } from '../support/organizations.ts';

export async function entriesOf(db: Knex, organizationId: string) {
  return db('credit_ledger_entries')
    .where({ organization_id: organizationId })
    .orderBy('seq')
    .select('kind', 'amount', 'from_account', 'to_account', 'grant_id', 'hold_id', 'user_id');
}

export async function balanceOf(db: Knex, organizationId: string) {
  return db('credit_balances').where({ organization_id: organizationId }).first('granted', 'captured', 'held', 'expired');
}

/** Runs `work` and returns the AppError (or other error) it throws. */
export async function failure(work: Promise<unknown>): Promise<{ status?: number; code?: string; message: string; issues?: { path: string[] }[] }> {
  try {
    await work;
  } catch (error) {
    return error as { status?: number; code?: string; message: string };
  }
  throw new Error('expected a failure');
}
