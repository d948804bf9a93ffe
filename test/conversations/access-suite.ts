import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import type { Knex } from 'knex';
import { addMember, createOrganization } from '../support/organizations.ts';
import { newUser, type TestServer, type TestUser } from '../support/server.ts';
import type { ServerSuite } from '../support/suite.ts';

/** How the shared access-control suite drives one resource type over HTTP. */
export interface ResourceKind {
  name: string;
  accessType: 'chat_conversation' | 'skill';
  /** Collection path, e.g. `/conversations`. */
  path: string;
  create(server: TestServer, owner: TestUser, organizationId: string, projectId?: string): Promise<string>;
  patchBody: Record<string, unknown>;
  /** The resource from a GET body (skills are wrapped in `{skill}`). */
  unwrap(body: any): any;
}

type Outcome = number;
interface Expectation {
  read: Outcome;
  listed: boolean;
  canEdit?: boolean;
  canDelete?: boolean;
  edit: Outcome;
  delete: Outcome;
  restore: Outcome;
  managePeople: Outcome;
}

type Reach = 'outside' | 'member' | 'viewer' | 'editor' | 'project-viewer' | 'project-editor' | 'org-admin';

/** What user B may do, by how B reaches a private resource created by A (CONVENTIONS §3–§4). */
const matrix: Record<Reach, Expectation> = {
  outside: { read: 404, listed: false, edit: 404, delete: 404, restore: 404, managePeople: 404 },
  member: { read: 404, listed: false, edit: 404, delete: 404, restore: 404, managePeople: 404 },
  viewer: { read: 200, listed: true, canEdit: false, canDelete: false, edit: 403, delete: 403, restore: 403, managePeople: 403 },
  editor: { read: 200, listed: true, canEdit: true, canDelete: false, edit: 200, delete: 403, restore: 403, managePeople: 403 },
  'project-viewer': { read: 200, listed: true, canEdit: false, canDelete: false, edit: 403, delete: 403, restore: 403, managePeople: 403 },
  'project-editor': { read: 200, listed: true, canEdit: true, canDelete: false, edit: 200, delete: 403, restore: 403, managePeople: 403 },
  'org-admin': { read: 200, listed: true, canEdit: true, canDelete: true, edit: 200, delete: 204, restore: 200, managePeople: 201 },
};

/** A project straight in the database (the projects domain is tested on its own). */
export async function insertProject(db: Knex, organizationId: string, ownerId: string): Promise<string> {
  const [row] = await db('projects').insert({ organization_id: organizationId, created_by_id: ownerId, slug: `p-${randomUUID().slice(0, 8)}`, title: 'Launch' }).returning('id');
  return row.id;
}

/** `context` is the enclosing suite's `useServer()` (read only inside tests). */
export function accessControlSuite(kind: ResourceKind, context: ServerSuite) {
  describe(`access control: ${kind.name} created privately by A, seen by B`, () => {
    for (const reach of Object.keys(matrix) as Reach[]) {
      const expected = matrix[reach];
      it(`B as ${reach}: read ${expected.read}, listed ${expected.listed}, edit ${expected.edit}, delete ${expected.delete}, restore ${expected.restore}, manage people ${expected.managePeople}`, async () => {
        const { server, db } = context;
        const a = newUser();
        const b = newUser();
        const c = newUser();
        const org = await createOrganization(server, a);
        await addMember(db, org, c);
        if (reach === 'outside') await createOrganization(server, b);
        else await addMember(db, org, b, reach === 'org-admin' ? 'admin' : 'member');
        let projectId: string | undefined;
        if (reach.startsWith('project-')) {
          projectId = await insertProject(db, org, a.id);
          const grant = await server.request('post', `/access/project/${projectId}/grants`, { token: a.token, body: { user_id: b.id, role: reach === 'project-editor' ? 'editor' : 'viewer' } });
          expect(grant.status, JSON.stringify(grant.body)).to.equal(201);
        }
        const id = await kind.create(server, a, org, projectId);
        if (reach === 'viewer' || reach === 'editor') {
          const grant = await server.request('post', `/access/${kind.accessType}/${id}/grants`, { token: a.token, body: { user_id: b.id, role: reach } });
          expect(grant.status, JSON.stringify(grant.body)).to.equal(201);
        }
        const path = `${kind.path}/${id}`;

        const read = await server.request('get', path, { token: b.token });
        expect(read.status).to.equal(expected.read);
        if (expected.read === 404) {
          const missing = await server.request('get', `${kind.path}/${randomUUID()}`, { token: b.token });
          expect(read.body).to.deep.equal(missing.body);
        }

        const list = await server.request('get', kind.path, { token: b.token, query: { organization_id: org } });
        expect(list.status).to.equal(200);
        const item = list.body.items.find((i: any) => i.id === id);
        expect(Boolean(item)).to.equal(expected.listed);
        if (item && kind.accessType === 'chat_conversation') {
          expect({ shared: item.shared, can_edit: item.can_edit, can_delete: item.can_delete }).to.deep.equal({
            shared: reach === 'viewer' || reach === 'editor',
            can_edit: expected.canEdit,
            can_delete: expected.canDelete,
          });
        }

        const edit = await server.request('patch', path, { token: b.token, body: kind.patchBody });
        expect(edit.status, JSON.stringify(edit.body)).to.equal(expected.edit);

        const people = await server.request('post', `/access/${kind.accessType}/${id}/grants`, { token: b.token, body: { user_id: c.id, role: 'viewer' } });
        expect(people.status, JSON.stringify(people.body)).to.equal(expected.managePeople);

        const del = await server.request('delete', path, { token: b.token });
        expect(del.status).to.equal(expected.delete);
        if (del.status !== 204) expect((await server.request('delete', path, { token: a.token })).status).to.equal(204);
        const restore = await server.request('post', `${path}/restore`, { token: b.token });
        expect(restore.status).to.equal(expected.restore);
        const row = await db(kind.accessType === 'skill' ? 'skills' : 'conversations').where({ id }).first('deleted_at');
        expect(row.deleted_at === null).to.equal(expected.restore === 200);
      });
    }
  });
}
