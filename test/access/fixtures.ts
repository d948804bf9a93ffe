import type { Knex } from 'knex';
import { newUser, type TestUser } from '../support/server.ts';

/** A user known to the database (users normally appear just in time on their first request). */
export async function knownUser(db: Knex): Promise<TestUser> {
  const user = newUser();
  await db('users').insert({ id: user.id, email: user.email, name: user.name }).onConflict('id').ignore();
  return user;
}

export { addMember, createOrganization } from '../support/organizations.ts';

export async function grant(
  db: Knex,
  organizationId: string,
  type: string,
  id: string,
  user: TestUser,
  role: 'viewer' | 'editor',
  by: TestUser,
): Promise<void> {
  await db('resource_grants').insert({ organization_id: organizationId, resource_type: type, resource_id: id, user_id: user.id, role, granted_by_id: by.id });
}

/** A project straight in the database, owned by `owner` (for suites that test what sits in projects, not projects). */
export async function insertProject(db: Knex, organizationId: string, owner: TestUser, fields: Record<string, unknown> = {}): Promise<string> {
  const [row] = await db('projects')
    .insert({ organization_id: organizationId, created_by_id: owner.id, title: 'P', slug: `p-${Math.random().toString(36).slice(2, 10)}`, ...fields })
    .returning('id');
  return row.id;
}

export async function insertCanvas(db: Knex, organizationId: string, owner: TestUser, fields: Record<string, unknown> = {}): Promise<string> {
  const [row] = await db('canvases')
    .insert({ organization_id: organizationId, created_by_id: owner.id, title: 'C', ...fields })
    .returning('id');
  return row.id;
}

export async function fileInto(db: Knex, projectId: string, type: string, itemId: string, via: 'origin' | 'reference' = 'reference'): Promise<void> {
  await db('project_items').insert({ project_id: projectId, item_type: type, item_id: itemId, via });
}
