import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { newUser, type TestServer, type TestUser } from './server.ts';

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

export interface OrganizationPair {
  org: string;
  owner: TestUser;
  other: TestUser;
}

/**
 * `count` fresh organizations, each with its owner and one other member holding `role`. Race tests
 * fire their concurrent requests across all of them at once, so the requests really do overlap.
 */
export async function organizationPairs(server: TestServer, db: Knex, role: string, count = 8): Promise<OrganizationPair[]> {
  return Promise.all(
    Array.from({ length: count }, async () => {
      const owner = newUser();
      const other = newUser();
      const org = await createOrganization(server, owner);
      await addMember(db, org, other, role);
      return { org, owner, other };
    }),
  );
}
