import { expect } from 'chai';
import type { TestUser } from '../support/server.ts';
import { useServer } from '../support/suite.ts';
import { addMember, knownUser, createOrganization } from './fixtures.ts';

/**
 * For projects and canvases: user B in five positions, against read, list, edit, delete,
 * restore and manage-people. 404 where B cannot read, 403 where B can read but lacks the right.
 */
type Position = 'outside the organization' | 'member without grant' | 'granted viewer' | 'granted editor' | 'through a project';
interface Outcome { read: number; listed: boolean; edit: number; delete: number; restore: number; managePeople: number }

const expected: Record<Position, Outcome> = {
  'outside the organization': { read: 404, listed: false, edit: 404, delete: 404, restore: 404, managePeople: 404 },
  'member without grant': { read: 404, listed: false, edit: 404, delete: 404, restore: 404, managePeople: 404 },
  'granted viewer': { read: 200, listed: true, edit: 403, delete: 403, restore: 403, managePeople: 403 },
  'granted editor': { read: 200, listed: true, edit: 200, delete: 403, restore: 403, managePeople: 403 },
  // Project editors edit the items in it, but never own them.
  'through a project': { read: 200, listed: true, edit: 200, delete: 403, restore: 403, managePeople: 403 },
};

describe('access control: projects and canvases', () => {
  const ctx = useServer();
  let owner: TestUser;
  let org: string;

  before(async () => {
    owner = await knownUser(ctx.db);
    org = await createOrganization(ctx.server, owner);
  });

  const kinds = {
    project: {
      path: 'projects',
      create: async () => (await ctx.server.request('post', '/projects', { token: owner.token, body: { organization_id: org, title: `P ${Math.random()}` } })).body.id as string,
      edit: { title: 'Renamed' },
      // (e) for a project itself: it reaches B through project general access (workspace editor).
      throughProject: async (id: string) => {
        await ctx.server.request('patch', `/access/project/${id}`, { token: owner.token, body: { visibility: 'workspace', workspace_role: 'editor' } });
      },
    },
    canvas: {
      path: 'canvases',
      create: async () => (await ctx.server.request('post', '/canvases', { token: owner.token, body: { organization_id: org, title: 'C' } })).body.id as string,
      edit: { title: 'Renamed' },
      throughProject: async (id: string, b: TestUser) => {
        const project = await ctx.server.request('post', '/projects', { token: owner.token, body: { organization_id: org, title: `Holder ${Math.random()}` } });
        expect((await ctx.server.request('post', `/projects/${project.body.id}/canvases`, { token: owner.token, body: { canvas_id: id } })).status).to.equal(201);
        await ctx.server.request('post', `/access/project/${project.body.id}/grants`, { token: owner.token, body: { user_id: b.id, role: 'editor' } });
      },
    },
  } as const;

  for (const [kind, k] of Object.entries(kinds)) {
    describe(kind, () => {
      for (const [position, want] of Object.entries(expected) as [Position, Outcome][]) {
        it(`B ${position}: read ${want.read}, listed ${want.listed}, edit ${want.edit}, delete ${want.delete}, restore ${want.restore}, manage people ${want.managePeople}`, async () => {
          const b = await knownUser(ctx.db);
          const c = await knownUser(ctx.db);
          await addMember(ctx.db, org, c);
          if (position !== 'outside the organization') await addMember(ctx.db, org, b);
          const id = await k.create();
          if (position === 'granted viewer' || position === 'granted editor') {
            const res = await ctx.server.request('post', `/access/${kind}/${id}/grants`, { token: owner.token, body: { user_id: b.id, role: position === 'granted viewer' ? 'viewer' : 'editor' } });
            expect(res.status).to.equal(201);
          }
          if (position === 'through a project') await k.throughProject(id, b);

          expect((await ctx.server.request('get', `/${k.path}/${id}`, { token: b.token })).status, 'read').to.equal(want.read);
          expect((await ctx.server.request('get', `/access/${kind}/${id}`, { token: b.token })).status, 'access record').to.equal(want.read);
          const list = await ctx.server.request('get', `/${k.path}`, { token: b.token, query: { organization_id: org, limit: 100 } });
          expect(list.status).to.equal(200);
          expect(list.body.items.some((item: { id: string }) => item.id === id), 'listed').to.equal(want.listed);
          expect((await ctx.server.request('patch', `/${k.path}/${id}`, { token: b.token, body: k.edit })).status, 'edit').to.equal(want.edit);
          expect((await ctx.server.request('post', `/access/${kind}/${id}/grants`, { token: b.token, body: { user_id: c.id, role: 'viewer' } })).status, 'manage people').to.equal(want.managePeople);
          expect((await ctx.server.request('patch', `/access/${kind}/${id}`, { token: b.token, body: { visibility: 'private' } })).status, 'general access').to.equal(want.managePeople);
          expect((await ctx.server.request('delete', `/${k.path}/${id}`, { token: b.token })).status, 'delete').to.equal(want.delete);
          expect(await ctx.db(k.path).where({ id }).first('deleted_at')).to.deep.equal({ deleted_at: null });

          expect((await ctx.server.request('delete', `/${k.path}/${id}`, { token: owner.token })).status).to.equal(204);
          expect((await ctx.server.request('post', `/${k.path}/${id}/restore`, { token: b.token })).status, 'restore').to.equal(want.restore);
          expect((await ctx.db(k.path).where({ id }).first('deleted_at')).deleted_at).to.be.instanceOf(Date);
          expect((await ctx.server.request('post', `/${k.path}/${id}/restore`, { token: owner.token })).status).to.equal(200);
        });
      }
      it('an organization admin acts as owner', async () => {
        const admin = await knownUser(ctx.db);
        await addMember(ctx.db, org, admin, 'admin');
        const id = await k.create();
        expect((await ctx.server.request('patch', `/${k.path}/${id}`, { token: admin.token, body: k.edit })).status).to.equal(200);
        expect((await ctx.server.request('delete', `/${k.path}/${id}`, { token: admin.token })).status).to.equal(204);
        expect((await ctx.server.request('post', `/${k.path}/${id}/restore`, { token: admin.token })).status).to.equal(200);
      });
    });
  }
});
