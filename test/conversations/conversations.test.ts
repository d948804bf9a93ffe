import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { insertProject } from '../access/fixtures.ts';
import { addMember, createOrganization } from '../support/organizations.ts';
import { newUser, type TestUser } from '../support/server.ts';
import { useServer } from '../support/suite.ts';
import { conversationFields } from '../support/shapes.ts';

const iso = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

describe('conversations', () => {
  const ctx = useServer({}, { pool: 4 });

  async function create(user: TestUser, body: Record<string, unknown>) {
    const res = await ctx.server.request('post', '/conversations', { token: user.token, body });
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    return res.body;
  }

  describe('POST /conversations', () => {
    it('creates a private conversation with every field of spec 2.3 and records the activity', async () => {
      const alice = newUser();
      const org = await createOrganization(ctx.server, alice);
      const res = await ctx.server.request('post', '/conversations', { token: alice.token, body: { organization_id: org, title: 'Launch plan' } });
      expect(res.status).to.equal(201);
      expect(Object.keys(res.body).sort()).to.deep.equal(conversationFields);
      const { id, created_at, updated_at, ...rest } = res.body;
      expect(id).to.match(/^[0-9a-f-]{36}$/);
      expect(created_at).to.match(iso);
      expect(updated_at).to.equal(created_at);
      expect(rest).to.deep.equal({
        organization_id: org,
        created_by_id: alice.id,
        title: 'Launch plan',
        visibility: 'private',
        workspace_role: 'viewer',
        project_id: null,
        active_leaf_id: null,
        schedule_id: null,
        forked_from_conversation_id: null,
        message_count: 0,
        last_message_at: null,
        active_run_id: null,
        active_run_at: null,
        active_workflow_run_id: null,
        mod_conversation_id: null,
        skill_id: null,
        tools: null,
        approval_tools: [],
        deleted_at: null,
        deleted_by_id: null,
      });
      const activity = await ctx.db('activity_events').where({ organization_id: org, subject_id: id }).select('action', 'actor_id', 'subject_type');
      expect(activity).to.deep.equal([{ action: 'conversation.created', actor_id: alice.id, subject_type: 'chat_conversation' }]);
      const got = await ctx.server.request('get', `/conversations/${id}`, { token: alice.token });
      expect(got.status).to.equal(200);
      expect(got.body).to.deep.equal(res.body);
    });

    it('files the conversation into a project the caller can edit', async () => {
      const alice = newUser();
      const org = await createOrganization(ctx.server, alice);
      const project = await insertProject(ctx.db, org, alice);
      const conversation = await create(alice, { organization_id: org, project_id: project, visibility: 'workspace' });
      expect(conversation).to.include({ project_id: project, visibility: 'workspace', title: null });
      expect(await ctx.db('project_items').where({ item_id: conversation.id }).select('project_id', 'item_type', 'via')).to.deep.equal([
        { project_id: project, item_type: 'chat_conversation', via: 'origin' },
      ]);
      const projects = await ctx.server.request('get', `/conversations/${conversation.id}/projects`, { token: alice.token });
      expect(projects.status).to.equal(200);
      expect(projects.body.items.map((p: any) => p.id)).to.deep.equal([project]);
      expect(projects.body.next_cursor).to.equal(null);
    });

    it('answers 400 naming the field, 403 for an organization the caller is not in (spec §4.1) and without resources.create', async () => {
      const alice = newUser();
      const org = await createOrganization(ctx.server, alice);
      const cases: [Record<string, unknown>, string[]][] = [
        [{}, ['organization_id']],
        [{ organization_id: org, visibility: 'public' }, ['visibility']],
        [{ organization_id: org, title: 'x'.repeat(301) }, ['title']],
        [{ organization_id: org, project_id: 'nope' }, ['project_id']],
        [{ organization_id: org, project_id: randomUUID() }, ['project_id']],
      ];
      for (const [body, path] of cases) {
        const res = await ctx.server.request('post', '/conversations', { token: alice.token, body });
        expect(res.status, JSON.stringify(body)).to.equal(400);
        expect(res.body.code).to.equal('validation_failed');
        expect(res.body.data.issues[0].path).to.deep.equal(path);
        expect(res.body.message).to.match(new RegExp(`^${path[0]}: `));
      }
      const unknown = await ctx.server.request('post', '/conversations', { token: alice.token, body: { organization_id: org, colour: 'red' } });
      expect(unknown.status).to.equal(400);
      expect(unknown.body.message).to.match(/colour/);
      const stranger = newUser();
      const notMine = await ctx.server.request('post', '/conversations', { token: stranger.token, body: { organization_id: org } });
      expect(notMine.status).to.equal(403);
      expect(notMine.body).to.deep.equal({ code: 'forbidden', message: `you are not a member of organization "${org}"`, data: { issues: [] } });
      await ctx.db('organization_roles').insert({ organization_id: org, key: 'reader', name: 'Reader', permissions: ['members.view'] });
      const reader = newUser();
      await addMember(ctx.db, org, reader, 'reader');
      const forbidden = await ctx.server.request('post', '/conversations', { token: reader.token, body: { organization_id: org } });
      expect(forbidden.status).to.equal(403);
      expect(forbidden.body.code).to.equal('forbidden');
      expect(await ctx.db('conversations').where({ organization_id: org }).count('* as n').first()).to.deep.equal({ n: 0 });
      const unauth = await ctx.server.request('post', '/conversations', { body: { organization_id: org } });
      expect(unauth.status).to.equal(401);
    });
  });

  describe('GET/PATCH/DELETE /conversations/{id} and restore', () => {
    it('renames, soft-deletes (kept with deleted_at), restores; each change is an activity entry', async () => {
      const alice = newUser();
      const org = await createOrganization(ctx.server, alice);
      const { id } = await create(alice, { organization_id: org, title: 'Draft' });
      const renamed = await ctx.server.request('patch', `/conversations/${id}`, { token: alice.token, body: { title: 'Final' } });
      expect(renamed.status).to.equal(200);
      expect(renamed.body.title).to.equal('Final');
      expect(Date.parse(renamed.body.updated_at)).to.be.greaterThanOrEqual(Date.parse(renamed.body.created_at));
      const del = await ctx.server.request('delete', `/conversations/${id}`, { token: alice.token });
      expect(del.status).to.equal(204);
      expect(del.body).to.equal(undefined);
      const deleted = await ctx.server.request('get', `/conversations/${id}`, { token: alice.token });
      expect(deleted.status).to.equal(200);
      expect(deleted.body.deleted_at).to.match(iso);
      expect(deleted.body.deleted_by_id).to.equal(alice.id);
      const live = await ctx.server.request('get', '/conversations', { token: alice.token, query: { organization_id: org } });
      expect(live.body.items.map((c: any) => c.id)).to.not.include(id);
      const bin = await ctx.server.request('get', '/conversations', { token: alice.token, query: { organization_id: org, deleted: true } });
      expect(bin.body.items.map((c: any) => c.id)).to.deep.equal([id]);
      const patchDeleted = await ctx.server.request('patch', `/conversations/${id}`, { token: alice.token, body: { title: 'Zombie' } });
      expect(patchDeleted.status).to.equal(409);
      expect(patchDeleted.body.code).to.equal('conflict');
      expect((await ctx.server.request('delete', `/conversations/${id}`, { token: alice.token })).status).to.equal(204);
      const restored = await ctx.server.request('post', `/conversations/${id}/restore`, { token: alice.token });
      expect(restored.status).to.equal(200);
      expect(Object.keys(restored.body).sort()).to.deep.equal(conversationFields);
      expect(restored.body).to.include({ id, title: 'Final', deleted_at: null, deleted_by_id: null });
      const again = await ctx.server.request('post', `/conversations/${id}/restore`, { token: alice.token });
      expect(again.status).to.equal(200);
      expect(again.body).to.deep.equal(restored.body);
      const actions = await ctx.db('activity_events').where({ subject_id: id }).orderBy('created_at').pluck('action');
      expect(actions).to.deep.equal(['conversation.created', 'conversation.updated', 'conversation.deleted', 'conversation.restored']);
    });

    it('answers 400 for a non-UUID id or an empty patch, 404 for an unknown id', async () => {
      const alice = newUser();
      const org = await createOrganization(ctx.server, alice);
      const { id } = await create(alice, { organization_id: org });
      const badId = await ctx.server.request('get', '/conversations/not-a-uuid', { token: alice.token });
      expect(badId.status).to.equal(400);
      expect(badId.body.data.issues[0].path).to.deep.equal(['conversation_id']);
      const empty = await ctx.server.request('patch', `/conversations/${id}`, { token: alice.token, body: {} });
      expect(empty.status).to.equal(400);
      const extra = await ctx.server.request('patch', `/conversations/${id}`, { token: alice.token, body: { visibility: 'workspace' } });
      expect(extra.status).to.equal(400);
      expect(extra.body.message).to.match(/visibility/);
      for (const [method, suffix] of [
        ['get', ''],
        ['patch', ''],
        ['delete', ''],
        ['post', '/restore'],
        ['get', '/projects'],
        ['get', '/access'],
      ] as const) {
        const res = await ctx.server.request(method, `/conversations/${randomUUID()}${suffix}`, {
          token: alice.token,
          body: method === 'patch' ? { title: 'x' } : undefined,
        });
        expect(res.status, `${method} ${suffix}`).to.equal(404);
        expect(res.body).to.deep.equal({ code: 'not_found', message: 'conversation not found', data: { issues: [] } });
      }
    });

    it('GET /conversations/{id}/access returns the access record of spec 2.7', async () => {
      const alice = newUser();
      const bob = newUser();
      const org = await createOrganization(ctx.server, alice);
      await addMember(ctx.db, org, bob);
      const { id } = await create(alice, { organization_id: org });
      const grant = await ctx.server.request('post', `/access/chat_conversation/${id}/grants`, {
        token: alice.token,
        body: { user_id: bob.id, role: 'editor' },
      });
      const res = await ctx.server.request('get', `/conversations/${id}/access`, { token: bob.token });
      expect(res.status).to.equal(200);
      expect(res.body).to.deep.equal({
        resource_type: 'chat_conversation',
        resource_id: id,
        owner_id: alice.id,
        role: 'editor',
        shared: true,
        capabilities: { can_edit: true, can_manage_people: false, can_change_general_access: false, can_delete: false },
        can_leave: true,
        general_access: { visibility: 'private', workspace_role: 'viewer' },
        general_access_editable: false,
        grants: [{ id: grant.body.id, user_id: bob.id, role: 'editor', granted_by_id: alice.id, created_at: grant.body.created_at }],
        inherited: [],
      });
    });
  });
});
