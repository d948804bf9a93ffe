import type { Knex } from 'knex';
import type { TestServer, TestUser } from '../support/server.ts';

/** Creates an organization through the API (which grants the configured starter credits). */
export async function createOrganization(server: TestServer, owner: TestUser, name = 'Credits Co'): Promise<string> {
  const res = await server.request('post', '/organizations', { token: owner.token, body: { name } });
  if (res.status !== 201) throw new Error(`organization not created: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.organization.id as string;
}

/** Adds a member with a role straight in the table (invitations are another domain). */
export async function addMember(db: Knex, organizationId: string, user: TestUser, role = 'member'): Promise<void> {
  await db('users').insert({ id: user.id, email: user.email, name: user.name }).onConflict('id').ignore();
  await db('organization_members').insert({ organization_id: organizationId, user_id: user.id, role });
}

export async function entriesOf(db: Knex, organizationId: string) {
  return db('credit_ledger_entries').where({ organization_id: organizationId }).orderBy('seq').select('kind', 'amount', 'from_account', 'to_account', 'grant_id', 'hold_id', 'user_id');
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
