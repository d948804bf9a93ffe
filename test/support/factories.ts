import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { signToken } from '../../src/auth/sign.ts';
import { TEST_JWT_SECRET } from './config.ts';
import { newUser, type ApiResponse, type TestServer, type TestUser } from './server.ts';

/**
 * Test data, made the way users make it: through the API wherever there is an operation for it
 * (so the rows, activity and defaults are the real ones), straight in the database only for what
 * would otherwise take a detour (membership without an invitation round trip). Every factory makes
 * fresh, uniquely named things, so tests never depend on each other's data.
 */

export { newUser, type TestUser };

/** A user whose token carries the operator role (claim `roles`, src/auth/operator.ts). */
export function newOperator(): TestUser {
  const user = newUser();
  return { ...user, token: signToken(TEST_JWT_SECRET, { sub: user.id, email: user.email, name: user.name, extra: { roles: ['operator'] } }) };
}

const unique = () => randomUUID().slice(0, 8);

/** The created resource, or an error naming the operation, the status and the body. */
function created(what: string, res: ApiResponse): any {
  if (res.status !== 201) throw new Error(`create ${what}: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

// Organizations and members

/**
 * Creates an organization through the API with `owner` as its owner; returns its id. The default
 * name is unique so parallel creations never compete for the same slug.
 */
export async function createOrganization(server: TestServer, owner: TestUser, name = `Test Co ${unique()}`): Promise<string> {
  const res = await server.request('post', '/organizations', { token: owner.token, body: { name } });
  return created('organization', res).organization.id;
}

/**
 * Makes `user` a member with `role` straight in the database (no invitation round trip). The user
 * row is created as the API would on the user's first request.
 */
export async function addMember(db: Knex, organizationId: string, user: Pick<TestUser, 'id' | 'email' | 'name'>, role = 'member'): Promise<void> {
  await db('users').insert({ id: user.id, email: user.email, name: user.name }).onConflict('id').ignore();
  await db('organization_members').insert({ organization_id: organizationId, user_id: user.id, role });
}

/** A fresh user who is a member of `organizationId` with `role`. */
export async function newMember(db: Knex, organizationId: string, role = 'member'): Promise<TestUser> {
  const user = newUser();
  await addMember(db, organizationId, user, role);
  return user;
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

// Resources (CONVENTIONS §4 create bodies; `fields` adds to or overrides the defaults)

type Fields = Record<string, unknown>;

const create = async (server: TestServer, by: TestUser, what: string, path: string, body: Fields) =>
  created(what, await server.request('post', path, { token: by.token, body }));

/** A project of `by` in the organization; returns the project. */
export const createProject = async (server: TestServer, by: TestUser, organizationId: string, fields: Fields = {}) =>
  create(server, by, 'project', '/projects', { organization_id: organizationId, title: `Project ${unique()}`, ...fields });

/** An asset (a text document unless `fields` says otherwise); returns the asset. */
export const createAsset = async (server: TestServer, by: TestUser, organizationId: string, fields: Fields = {}) =>
  create(server, by, 'asset', '/assets', { organization_id: organizationId, type: 'document', title: `Asset ${unique()}`, ...fields });

/** A canvas; returns the canvas. */
export const createCanvas = async (server: TestServer, by: TestUser, organizationId: string, fields: Fields = {}) =>
  create(server, by, 'canvas', '/canvases', { organization_id: organizationId, title: `Canvas ${unique()}`, ...fields });

/** A conversation; returns the conversation. */
export const createConversation = async (server: TestServer, by: TestUser, organizationId: string, fields: Fields = {}) =>
  create(server, by, 'conversation', '/conversations', { organization_id: organizationId, title: `Conversation ${unique()}`, ...fields });

/** A skill; returns the skill (the API wraps it in `{skill}`). */
export const createSkill = async (server: TestServer, by: TestUser, organizationId: string, fields: Fields = {}) =>
  (await create(server, by, 'skill', '/skills', { organization_id: organizationId, name: `Skill ${unique()}`, description: '', body: 'x', ...fields })).skill;
