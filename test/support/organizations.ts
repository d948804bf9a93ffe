import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import type { TestServer, TestUser } from './server.ts';

/**
 * Creates an organization through the API with `owner` as its owner; returns its id. The default
 * name is unique so parallel creations never compete for the same slug.
 */
export async function createOrganization(server: TestServer, owner: TestUser, name = `Test Co ${randomUUID().slice(0, 8)}`): Promise<string> {
  const res = await server.request('post', '/organizations', { token: owner.token, body: { name } });
  if (res.status !== 201) throw new Error(`create organization: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.organization.id;
}

/**
 * Makes `user` a member with `role` straight in the database (no invitation round trip). The user
 * row is created as the API would on the user's first request.
 */
export async function addMember(db: Knex, organizationId: string, user: Pick<TestUser, 'id' | 'email' | 'name'>, role = 'member'): Promise<void> {
  await db('users').insert({ id: user.id, email: user.email, name: user.name }).onConflict('id').ignore();
  await db('organization_members').insert({ organization_id: organizationId, user_id: user.id, role });
}
