import { expect } from 'chai';
import type { TestUser } from '../support/server.ts';
import { useServer } from '../support/suite.ts';
import { addMember, knownUser, createOrganization } from './fixtures.ts';

const iso = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

describe('access routes', () => {
  const ctx = useServer();
  let alice: TestUser; // organization owner
  let bob: TestUser; // member
  let carol: TestUser; // member
  let outsider: TestUser;
  let org: string;

  before(async () => {
    alice = await knownUser(ctx.db);
    bob = await knownUser(ctx.db);
    carol = await knownUser(ctx.db);
    outsider = await knownUser(ctx.db);
    org = await createOrganization(ctx.server, alice);
    await addMember(ctx.db, org, bob);
    await addMember(ctx.db, org, carol);
  });

  const newCanvas = async (by: TestUser, body: Record<string, unknown> = {}) => {
    const res = await ctx.server.request('post', '/canvases', { token: by.token, body: { organization_id: org, title: 'Board', ...body } });
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    return res.body.id as string;
  };

  describe('GET /access/{resource_type}/{resource_id}', () => {
    it('returns the exact record for the owner, with grants and general access', async () => {
      const canvas = await newCanvas(bob, { visibility: 'workspace' });
      const granted = await ctx.server.request('post', `/access/canvas/${canvas}/grants`, { token: bob.token, body: { user_id: carol.id, role: 'editor' } });
      expect(granted.status).to.equal(201);
      const res = await ctx.server.request('get', `/access/canvas/${canvas}`, { token: bob.token });
      expect(res.status).to.equal(200);
      expect(res.body).to.deep.equal({
        resource_type: 'canvas',
        resource_id: canvas,
        owner_id: bob.id,
        role: 'owner',
        shared: true,
        capabilities: { can_edit: true, can_manage_people: true, can_change_general_access: true, can_delete: true },
        can_leave: false,
        general_access: { visibility: 'workspace', workspace_role: 'viewer' },
        general_access_editable: true,
        grants: [{ id: granted.body.id, user_id: carol.id, role: 'editor', granted_by_id: bob.id, created_at: granted.body.created_at }],
        inherited: [],
      });
      expect(granted.body.created_at).to.match(iso);
    });

    it('shows a grantee their role, can_leave and no management rights; an organization owner is owner', async () => {
      const canvas = await newCanvas(bob);
      await ctx.server.request('post', `/access/canvas/${canvas}/grants`, { token: bob.token, body: { user_id: carol.id, role: 'viewer' } });
      const asCarol = await ctx.server.request('get', `/access/canvas/${canvas}`, { token: carol.token });
      expect(asCarol.status).to.equal(200);
      expect(asCarol.body).to.include({ role: 'viewer', shared: true, can_leave: true, general_access_editable: false, owner_id: bob.id });
      expect(asCarol.body.capabilities).to.deep.equal({ can_edit: false, can_manage_people: false, can_change_general_access: false, can_delete: false });
      const asAlice = await ctx.server.request('get', `/access/canvas/${canvas}`, { token: alice.token });
      expect(asAlice.body).to.include({ role: 'owner', can_leave: false, general_access_editable: true });
    });

    it('lists inherited access: project (origin) for a canvas, and canvas + project through it for an asset', async () => {
      const project = await ctx.server.request('post', '/projects', { token: alice.token, body: { organization_id: org, title: 'Launch', emoji: '🚀' } });
      const canvas = await newCanvas(alice, { project_id: project.body.id });
      await ctx.server.request('post', `/access/project/${project.body.id}/grants`, { token: alice.token, body: { user_id: bob.id, role: 'viewer' } });
      const res = await ctx.server.request('get', `/access/canvas/${canvas}`, { token: bob.token });
      expect(res.status).to.equal(200);
      expect(res.body.role).to.equal('viewer');
      expect(res.body.shared).to.equal(false);
      expect(res.body.inherited).to.deep.equal([
        { kind: 'project', id: project.body.id, title: 'Launch', emoji: '🚀', via: 'origin', role: 'viewer', audience: true },
      ]);
      // Carol is not in the project's audience: the entry says so and shows what its workspace audience would get.
      expect((await ctx.server.request('get', `/access/canvas/${canvas}`, { token: carol.token })).status).to.equal(404);
      const asOwner = await ctx.server.request('get', `/access/canvas/${canvas}`, { token: alice.token });
      expect(asOwner.body.inherited[0]).to.include({ audience: true, role: 'editor' });

      const [asset] = await ctx
        .db('assets')
        .insert({ organization_id: org, created_by_id: alice.id, type: 'text', title: 'Note', origin_canvas_id: canvas })
        .returning('id');
      const record = await ctx.server.request('get', `/access/asset/${asset.id}`, { token: bob.token });
      expect(record.status).to.equal(200);
      expect(record.body.role).to.equal('viewer');
      expect(record.body.inherited).to.deep.equal([
        { kind: 'canvas', id: canvas, title: 'Board', emoji: null, via: 'origin', role: 'viewer', audience: true },
        { kind: 'project', id: project.body.id, title: 'Launch', emoji: '🚀', via: 'origin', role: 'viewer', through: 'canvas', audience: true },
      ]);
    });

    it('marks an inherited source whose audience excludes the caller (audience false)', async () => {
      const project = await ctx.server.request('post', '/projects', { token: alice.token, body: { organization_id: org, title: 'Hidden' } });
      const canvas = await newCanvas(alice, { project_id: project.body.id });
      await ctx.server.request('post', `/access/canvas/${canvas}/grants`, { token: alice.token, body: { user_id: bob.id, role: 'editor' } });
      const res = await ctx.server.request('get', `/access/canvas/${canvas}`, { token: bob.token });
      expect(res.body.role).to.equal('editor');
      expect(res.body.inherited).to.deep.equal([
        { kind: 'project', id: project.body.id, title: 'Hidden', emoji: null, via: 'origin', role: 'viewer', audience: false },
      ]);
    });

    it('answers 404 alike for unreadable, nonexistent and unregistered resources; 400 for a bad id or type', async () => {
      const canvas = await newCanvas(bob);
      const unreadable = await ctx.server.request('get', `/access/canvas/${canvas}`, { token: carol.token });
      const missing = await ctx.server.request('get', '/access/canvas/00000000-0000-4000-8000-000000000000', { token: carol.token });
      const outside = await ctx.server.request('get', `/access/canvas/${canvas}`, { token: outsider.token });
      expect(unreadable.status).to.equal(404);
      expect(unreadable.body).to.deep.equal(missing.body);
      expect(outside.body).to.deep.equal(missing.body);
      expect(missing.body).to.deep.equal({ code: 'not_found', message: 'canvas not found', data: { issues: [] } });
      expect((await ctx.server.request('get', '/access/scheduled_task/00000000-0000-4000-8000-000000000000', { token: alice.token })).status).to.equal(404);
      const badId = await ctx.server.request('get', '/access/canvas/not-a-uuid', { token: alice.token });
      expect(badId.status).to.equal(400);
      expect(badId.body.data.issues[0].path).to.deep.equal(['resource_id']);
      const badType = await ctx.server.request('get', `/access/document/${canvas}`, { token: alice.token });
      expect(badType.status).to.equal(400);
      expect(badType.body.data.issues[0].path).to.deep.equal(['resource_type']);
    });

    it('GET /canvases/{canvas_id}/access is the same record', async () => {
      const canvas = await newCanvas(bob, { visibility: 'workspace', workspace_role: 'editor' });
      const a = await ctx.server.request('get', `/canvases/${canvas}/access`, { token: carol.token });
      const b = await ctx.server.request('get', `/access/canvas/${canvas}`, { token: carol.token });
      expect(a.status).to.equal(200);
      expect(a.body).to.deep.equal(b.body);
      expect(a.body).to.include({ role: 'editor', can_leave: false });
    });
  });

  describe('PATCH /access/{resource_type}/{resource_id}', () => {
    it('lets the owner change each field, records the activity and returns the record', async () => {
      const canvas = await newCanvas(bob);
      const res = await ctx.server.request('patch', `/access/canvas/${canvas}`, {
        token: bob.token,
        body: { visibility: 'workspace', workspace_role: 'editor' },
      });
      expect(res.status).to.equal(200);
      expect(res.body.general_access).to.deep.equal({ visibility: 'workspace', workspace_role: 'editor' });
      expect(res.body.shared).to.equal(true);
      const row = await ctx.db('canvases').where({ id: canvas }).first();
      expect(row).to.include({ visibility: 'workspace', workspace_role: 'editor' });
      const activity = await ctx.db('activity_events').where({ subject_id: canvas, action: 'access.general_access_updated' });
      expect(activity).to.have.length(1);
      expect(activity[0].data).to.deep.equal({
        before: { visibility: 'private', workspace_role: 'viewer' },
        after: { visibility: 'workspace', workspace_role: 'editor' },
      });
      const only = await ctx.server.request('patch', `/access/canvas/${canvas}`, { token: bob.token, body: { workspace_role: 'viewer' } });
      expect(only.body.general_access).to.deep.equal({ visibility: 'workspace', workspace_role: 'viewer' });
    });

    it('authorizes each field present on its own, an unchanged one too (editor → 403, nothing written)', async () => {
      const canvas = await newCanvas(bob, { visibility: 'workspace', workspace_role: 'editor' });
      for (const body of [{ visibility: 'workspace' }, { workspace_role: 'editor' }, { visibility: 'private' }]) {
        const res = await ctx.server.request('patch', `/access/canvas/${canvas}`, { token: carol.token, body });
        expect(res.status, JSON.stringify(body)).to.equal(403);
        expect(res.body.code).to.equal('forbidden');
        expect(res.body.message).to.match(new RegExp(`^${Object.keys(body)[0]}: `));
      }
      expect(await ctx.db('activity_events').where({ subject_id: canvas, action: 'access.general_access_updated' })).to.have.length(0);
    });

    it('rejects public, an empty body and unknown fields with 400; unreadable is 404', async () => {
      const canvas = await newCanvas(bob);
      const pub = await ctx.server.request('patch', `/access/canvas/${canvas}`, { token: bob.token, body: { visibility: 'public' } });
      expect(pub.status).to.equal(400);
      expect(pub.body.data.issues[0].path).to.deep.equal(['visibility']);
      expect(pub.body.message).to.match(/^visibility: .*public/);
      const empty = await ctx.server.request('patch', `/access/canvas/${canvas}`, { token: bob.token, body: {} });
      expect(empty.status).to.equal(400);
      expect(empty.body.message).to.match(/at least one of visibility, workspace_role/);
      const ownerRole = await ctx.server.request('patch', `/access/canvas/${canvas}`, { token: bob.token, body: { workspace_role: 'owner' } });
      expect(ownerRole.status).to.equal(400);
      const unknown = await ctx.server.request('patch', `/access/canvas/${canvas}`, { token: bob.token, body: { visibility: 'private', colour: 1 } });
      expect(unknown.status).to.equal(400);
      expect((await ctx.server.request('patch', `/access/canvas/${canvas}`, { token: carol.token, body: { visibility: 'private' } })).status).to.equal(404);
    });
  });

  describe('grants', () => {
    it('creates (201), updates (200) and deletes (204) a grant with an activity entry each', async () => {
      const canvas = await newCanvas(bob);
      const created = await ctx.server.request('post', `/access/canvas/${canvas}/grants`, { token: bob.token, body: { user_id: carol.id, role: 'viewer' } });
      expect(created.status).to.equal(201);
      expect(Object.keys(created.body).sort()).to.deep.equal(['created_at', 'granted_by_id', 'id', 'role', 'user_id']);
      expect(created.body).to.include({ user_id: carol.id, role: 'viewer', granted_by_id: bob.id });
      const updated = await ctx.server.request('patch', `/access/canvas/${canvas}/grants/${created.body.id}`, { token: bob.token, body: { role: 'editor' } });
      expect(updated.status).to.equal(200);
      expect(updated.body).to.deep.equal({ ...created.body, role: 'editor' });
      expect((await ctx.server.request('get', `/access/canvas/${canvas}`, { token: carol.token })).body.role).to.equal('editor');
      const removed = await ctx.server.request('delete', `/access/canvas/${canvas}/grants/${created.body.id}`, { token: bob.token });
      expect(removed.status).to.equal(204);
      expect(await ctx.db('resource_grants').where({ id: created.body.id })).to.have.length(0);
      expect((await ctx.server.request('get', `/access/canvas/${canvas}`, { token: carol.token })).status).to.equal(404);
      const actions = await ctx.db('activity_events').where({ subject_id: canvas }).orderBy('created_at').pluck('action');
      expect(actions).to.deep.equal(['canvas.created', 'access.grant_created', 'access.grant_updated', 'access.grant_deleted']);
    });

    it('rejects a duplicate (409), a non-member or the owner (400), and bad roles (400)', async () => {
      const canvas = await newCanvas(bob);
      expect(
        (await ctx.server.request('post', `/access/canvas/${canvas}/grants`, { token: bob.token, body: { user_id: carol.id, role: 'viewer' } })).status,
      ).to.equal(201);
      const dup = await ctx.server.request('post', `/access/canvas/${canvas}/grants`, { token: bob.token, body: { user_id: carol.id, role: 'editor' } });
      expect(dup.status).to.equal(409);
      expect(dup.body.data.issues[0].path).to.deep.equal(['user_id']);
      const stranger = await ctx.server.request('post', `/access/canvas/${canvas}/grants`, {
        token: bob.token,
        body: { user_id: outsider.id, role: 'viewer' },
      });
      expect(stranger.status).to.equal(400);
      expect(stranger.body.message).to.match(/^user_id: .*not a member/);
      const self = await ctx.server.request('post', `/access/canvas/${canvas}/grants`, { token: bob.token, body: { user_id: bob.id, role: 'viewer' } });
      expect(self.status).to.equal(400);
      const owner = await ctx.server.request('post', `/access/canvas/${canvas}/grants`, { token: bob.token, body: { user_id: alice.id, role: 'owner' } });
      expect(owner.status).to.equal(400);
      expect(owner.body.data.issues[0].path).to.deep.equal(['role']);
      expect(await ctx.db('resource_grants').where({ resource_id: canvas })).to.have.length(1);
    });

    it('lets only owners manage people: editor 403, unreadable 404; a grantee may leave; foreign grant ids are 404', async () => {
      const canvas = await newCanvas(bob);
      const other = await newCanvas(bob);
      const carolGrant = await ctx.server.request('post', `/access/canvas/${canvas}/grants`, { token: bob.token, body: { user_id: carol.id, role: 'editor' } });
      const asEditor = await ctx.server.request('post', `/access/canvas/${canvas}/grants`, { token: carol.token, body: { user_id: alice.id, role: 'viewer' } });
      expect(asEditor.status).to.equal(403);
      expect(
        (await ctx.server.request('patch', `/access/canvas/${canvas}/grants/${carolGrant.body.id}`, { token: carol.token, body: { role: 'viewer' } })).status,
      ).to.equal(403);
      expect(
        (await ctx.server.request('post', `/access/canvas/${other}/grants`, { token: carol.token, body: { user_id: alice.id, role: 'viewer' } })).status,
      ).to.equal(404);
      expect(
        (await ctx.server.request('post', `/access/canvas/${canvas}/grants`, { token: outsider.token, body: { user_id: alice.id, role: 'viewer' } })).status,
      ).to.equal(404);
      expect(
        (await ctx.server.request('patch', `/access/canvas/${other}/grants/${carolGrant.body.id}`, { token: bob.token, body: { role: 'viewer' } })).status,
      ).to.equal(404);
      const leave = await ctx.server.request('delete', `/access/canvas/${canvas}/grants/${carolGrant.body.id}`, { token: carol.token });
      expect(leave.status).to.equal(204);
      const left = await ctx.db('activity_events').where({ subject_id: canvas, action: 'access.left' });
      expect(left).to.have.length(1);
    });

    it('a grantee cannot remove someone else’s grant (403)', async () => {
      const canvas = await newCanvas(bob);
      const carolGrant = await ctx.server.request('post', `/access/canvas/${canvas}/grants`, { token: bob.token, body: { user_id: carol.id, role: 'viewer' } });
      const dave = await knownUser(ctx.db);
      await addMember(ctx.db, org, dave);
      await ctx.server.request('post', `/access/canvas/${canvas}/grants`, { token: bob.token, body: { user_id: dave.id, role: 'viewer' } });
      const res = await ctx.server.request('delete', `/access/canvas/${canvas}/grants/${carolGrant.body.id}`, { token: dave.token });
      expect(res.status).to.equal(403);
    });
  });
});
