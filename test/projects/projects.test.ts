import { expect } from 'chai';
import type { TestUser } from '../support/server.ts';
import { useServer } from '../support/suite.ts';
import { addMember, knownUser, createOrganization } from '../access/fixtures.ts';

const projectKeys = [
  'archived_at',
  'archived_by_id',
  'chat_tools',
  'created_at',
  'created_by_id',
  'deleted_at',
  'deleted_by_id',
  'description',
  'emoji',
  'id',
  'knowledge_skill_id',
  'metadata',
  'mod_source_id',
  'organization_id',
  'slug',
  'title',
  'updated_at',
  'visibility',
  'workspace_role',
];

describe('projects', () => {
  const ctx = useServer();
  let alice: TestUser;
  let bob: TestUser;
  let org: string;

  before(async () => {
    alice = await knownUser(ctx.db);
    bob = await knownUser(ctx.db);
    org = await createOrganization(ctx.server, alice);
    await addMember(ctx.db, org, bob);
  });

  const create = async (by: TestUser, body: Record<string, unknown>) =>
    ctx.server.request('post', '/projects', { token: by.token, body: { organization_id: org, ...body } });

  it('POST /projects creates a project (201) with every field of spec 2.4 and an activity entry', async () => {
    const res = await create(bob, { title: 'Spring Launch!', emoji: '🌱', description: 'Q2', metadata: [1, 'two'] });
    expect(res.status).to.equal(201);
    expect(Object.keys(res.body).sort()).to.deep.equal(projectKeys);
    expect(res.body).to.deep.include({
      organization_id: org,
      created_by_id: bob.id,
      slug: 'spring-launch',
      title: 'Spring Launch!',
      emoji: '🌱',
      description: 'Q2',
      visibility: 'private',
      workspace_role: 'viewer',
      knowledge_skill_id: null,
      chat_tools: null,
      mod_source_id: null,
      metadata: [1, 'two'],
      deleted_at: null,
      deleted_by_id: null,
      archived_at: null,
      archived_by_id: null,
    });
    const second = await create(bob, { title: 'Spring launch' });
    expect(second.body.slug).to.equal('spring-launch-2');
    const activity = await ctx.db('activity_events').where({ subject_id: res.body.id }).pluck('action');
    expect(activity).to.deep.equal(['project.created']);
  });

  it('POST /projects validates: missing title, public, unknown field → 400; taken slug → 409; non-member → 403', async () => {
    const missing = await create(alice, {});
    expect(missing.status).to.equal(400);
    expect(missing.body.data.issues[0].path).to.deep.equal(['title']);
    const pub = await create(alice, { title: 'X', visibility: 'public' });
    expect(pub.status).to.equal(400);
    expect(pub.body.data.issues[0].path).to.deep.equal(['visibility']);
    expect((await create(alice, { title: 'X', owner: 'me' })).status).to.equal(400);
    expect((await create(alice, { title: 'X', slug: 'Not Slug' })).status).to.equal(400);
    expect((await create(alice, { title: 'A', slug: 'fixed-slug' })).status).to.equal(201);
    const taken = await create(alice, { title: 'B', slug: 'fixed-slug' });
    expect(taken.status).to.equal(409);
    expect(taken.body.data.issues[0].path).to.deep.equal(['slug']);
    const stranger = newcomer();
    const res = await ctx.server.request('post', '/projects', { token: (await stranger).token, body: { organization_id: org, title: 'X' } });
    expect(res.status).to.equal(403);
    expect(res.body.code).to.equal('forbidden');
  });

  const newcomer = () => knownUser(ctx.db);

  it('GET/PATCH /projects/{id}: read and edit with exact shapes; PATCH rejects visibility and empty bodies', async () => {
    const { body: project } = await create(alice, { title: 'Edit me' });
    const got = await ctx.server.request('get', `/projects/${project.id}`, { token: alice.token });
    expect(got.status).to.equal(200);
    expect(got.body).to.deep.equal(project);
    const patched = await ctx.server.request('patch', `/projects/${project.id}`, {
      token: alice.token,
      body: { title: 'Edited', emoji: null, description: 'd', slug: 'edited' },
    });
    expect(patched.status).to.equal(200);
    expect(patched.body).to.include({ title: 'Edited', emoji: null, description: 'd', slug: 'edited' });
    expect(new Date(patched.body.updated_at).getTime()).to.be.at.least(new Date(project.updated_at).getTime());
    expect((await ctx.server.request('patch', `/projects/${project.id}`, { token: alice.token, body: {} })).status).to.equal(400);
    expect((await ctx.server.request('patch', `/projects/${project.id}`, { token: alice.token, body: { visibility: 'workspace' } })).status).to.equal(400);
    expect((await ctx.server.request('get', '/projects/nope', { token: alice.token })).status).to.equal(400);
    expect((await ctx.server.request('get', '/projects/00000000-0000-4000-8000-000000000000', { token: alice.token })).status).to.equal(404);
    const actions = await ctx.db('activity_events').where({ subject_id: project.id }).orderBy('created_at').pluck('action');
    expect(actions).to.deep.equal(['project.created', 'project.updated']);
  });

  it('DELETE (204) soft-deletes, restore (200) brings it back; lists hide deleted unless deleted=true', async () => {
    const { body: project } = await create(alice, { title: 'Trash me' });
    const del = await ctx.server.request('delete', `/projects/${project.id}`, { token: alice.token });
    expect(del.status).to.equal(204);
    const row = await ctx.db('projects').where({ id: project.id }).first();
    expect(row.deleted_by_id).to.equal(alice.id);
    expect(row.deleted_at).to.be.instanceOf(Date);
    const got = await ctx.server.request('get', `/projects/${project.id}`, { token: alice.token });
    expect(got.body.deleted_at).to.be.a('string');
    expect((await ctx.server.request('patch', `/projects/${project.id}`, { token: alice.token, body: { title: 'x' } })).status).to.equal(409);
    const live = await ctx.server.request('get', '/projects', { token: alice.token, query: { organization_id: org, limit: 100 } });
    expect(live.body.items.map((p: { id: string }) => p.id)).not.to.include(project.id);
    const trash = await ctx.server.request('get', '/projects', { token: alice.token, query: { organization_id: org, deleted: true } });
    expect(trash.body.items.map((p: { id: string }) => p.id)).to.include(project.id);
    const restored = await ctx.server.request('post', `/projects/${project.id}/restore`, { token: alice.token });
    expect(restored.status).to.equal(200);
    expect(restored.body).to.include({ deleted_at: null, deleted_by_id: null, id: project.id });
    const actions = await ctx.db('activity_events').where({ subject_id: project.id }).orderBy('created_at').pluck('action');
    expect(actions).to.deep.equal(['project.created', 'project.deleted', 'project.restored']);
  });

  it('archive/unarchive set and clear archived_at/archived_by_id; archived=true lists only archived', async () => {
    const { body: project } = await create(alice, { title: 'Old' });
    const archived = await ctx.server.request('post', `/projects/${project.id}/archive`, { token: alice.token });
    expect(archived.status).to.equal(200);
    expect(archived.body.archived_by_id).to.equal(alice.id);
    expect(archived.body.archived_at).to.be.a('string');
    const again = await ctx.server.request('post', `/projects/${project.id}/archive`, { token: alice.token });
    expect(again.body.archived_at).to.equal(archived.body.archived_at);
    const list = await ctx.server.request('get', '/projects', { token: alice.token, query: { organization_id: org, archived: true } });
    expect(list.body.items.map((p: { id: string }) => p.id)).to.include(project.id);
    expect(list.body.items.every((p: { archived_at: string | null }) => p.archived_at !== null)).to.equal(true);
    const unarchived = await ctx.server.request('post', `/projects/${project.id}/unarchive`, { token: alice.token });
    expect(unarchived.status).to.equal(200);
    expect(unarchived.body).to.include({ archived_at: null, archived_by_id: null });
  });

  it('GET /projects: search, created_by, keyset pages with every item exactly once, bad cursor 400, non-member empty page', async () => {
    const { body: own } = await create(bob, { title: 'Zebra Findable' });
    expect(
      (await ctx.server.request('get', '/projects', { token: bob.token, query: { organization_id: org, search: 'zebra find' } })).body.items.map(
        (p: { id: string }) => p.id,
      ),
    ).to.deep.equal([own.id]);
    const mine = await ctx.server.request('get', '/projects', { token: bob.token, query: { organization_id: org, created_by: bob.id, limit: 100 } });
    expect(mine.body.items.every((p: { created_by_id: string }) => p.created_by_id === bob.id)).to.equal(true);
    const all = await ctx.server.request('get', '/projects', { token: alice.token, query: { organization_id: org, limit: 100 } });
    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await ctx.server.request('get', '/projects', { token: alice.token, query: { organization_id: org, limit: 2, cursor } });
      expect(page.status).to.equal(200);
      seen.push(...page.body.items.map((p: { id: string }) => p.id));
      cursor = page.body.next_cursor ?? undefined;
    } while (cursor);
    expect(seen).to.deep.equal(all.body.items.map((p: { id: string }) => p.id));
    expect((await ctx.server.request('get', '/projects', { token: alice.token, query: { organization_id: org, cursor: 'garbage' } })).status).to.equal(400);
    expect((await ctx.server.request('get', '/projects', { token: alice.token })).status).to.equal(400);
    const stranger = await newcomer();
    expect((await ctx.server.request('get', '/projects', { token: stranger.token, query: { organization_id: org } })).body).to.deep.equal({
      items: [],
      next_cursor: null,
    });
  });

  it('GET /projects/accounts lists the caller’s organizations with readable project counts', async () => {
    const carol = await knownUser(ctx.db);
    const own = await createOrganization(ctx.server, carol, 'Carol Co');
    await addMember(ctx.db, org, carol);
    await ctx.server.request('post', '/projects', { token: carol.token, body: { organization_id: own, title: 'One' } });
    const arch = await ctx.server.request('post', '/projects', { token: carol.token, body: { organization_id: own, title: 'Two' } });
    await ctx.server.request('post', `/projects/${arch.body.id}/archive`, { token: carol.token });
    const res = await ctx.server.request('get', '/projects/accounts', { token: carol.token });
    expect(res.status).to.equal(200);
    expect(res.body.next_cursor).to.equal(null);
    expect(res.body.items[0]).to.deep.equal({
      organization_id: own,
      name: 'Carol Co',
      slug: res.body.items[0].slug,
      role: 'owner',
      can_create_projects: true,
      project_count: 1,
      archived_project_count: 1,
    });
    expect(res.body.items[1]).to.include({ organization_id: org, role: 'member', can_create_projects: true, project_count: 0 });
  });

  describe('membership of items', () => {
    it('adds (201), lists and removes (204) canvases; 409 on a duplicate; item owner required', async () => {
      const { body: project } = await create(alice, { title: 'Holder' });
      const canvas = await ctx.server.request('post', '/canvases', { token: alice.token, body: { organization_id: org, title: 'C1' } });
      const added = await ctx.server.request('post', `/projects/${project.id}/canvases`, { token: alice.token, body: { canvas_id: canvas.body.id } });
      expect(added.status).to.equal(201);
      expect(Object.keys(added.body).sort()).to.deep.equal(['added_by_id', 'canvas_id', 'created_at', 'project_id', 'via']);
      expect(added.body).to.include({ project_id: project.id, canvas_id: canvas.body.id, via: 'reference', added_by_id: alice.id });
      expect(
        (await ctx.server.request('post', `/projects/${project.id}/canvases`, { token: alice.token, body: { canvas_id: canvas.body.id } })).status,
      ).to.equal(409);
      const list = await ctx.server.request('get', `/projects/${project.id}/canvases`, { token: alice.token });
      expect(list.status).to.equal(200);
      // The list answers the canvases themselves (as GET /canvases/{id}), not their memberships.
      const own = await ctx.server.request('get', `/canvases/${canvas.body.id}`, { token: alice.token });
      expect(list.body).to.deep.equal({ items: [own.body], next_cursor: null });
      const projects = await ctx.server.request('get', `/canvases/${canvas.body.id}/projects`, { token: alice.token });
      expect(projects.body.items.map((p: { id: string }) => p.id)).to.deep.equal([project.id]);
      const removed = await ctx.server.request('delete', `/projects/${project.id}/canvases/${canvas.body.id}`, { token: alice.token });
      expect(removed.status).to.equal(204);
      expect((await ctx.server.request('delete', `/projects/${project.id}/canvases/${canvas.body.id}`, { token: alice.token })).status).to.equal(404);
      const actions = await ctx.db('activity_events').where({ subject_id: project.id }).orderBy('created_at').pluck('action');
      expect(actions).to.deep.equal(['project.created', 'project.item_added', 'project.item_removed']);
      // Bob (member) owns a canvas but cannot edit Alice's private project: 404; with editor he can file his own canvas.
      const bobs = await ctx.server.request('post', '/canvases', { token: bob.token, body: { organization_id: org } });
      expect((await ctx.server.request('post', `/projects/${project.id}/canvases`, { token: bob.token, body: { canvas_id: bobs.body.id } })).status).to.equal(
        404,
      );
      await ctx.server.request('post', `/access/project/${project.id}/grants`, { token: alice.token, body: { user_id: bob.id, role: 'editor' } });
      expect((await ctx.server.request('post', `/projects/${project.id}/canvases`, { token: bob.token, body: { canvas_id: bobs.body.id } })).status).to.equal(
        201,
      );
      // …but not someone else's canvas that he can merely edit (filing shares it): 403.
      const shared = await ctx.server.request('post', '/canvases', {
        token: alice.token,
        body: { organization_id: org, visibility: 'workspace', workspace_role: 'editor' },
      });
      expect((await ctx.server.request('post', `/projects/${project.id}/canvases`, { token: bob.token, body: { canvas_id: shared.body.id } })).status).to.equal(
        403,
      );
      expect((await ctx.server.request('post', `/projects/${project.id}/canvases`, { token: bob.token, body: { canvas_id: 'x' } })).status).to.equal(400);
      expect((await ctx.server.request('post', `/projects/${project.id}/canvases`, { token: bob.token, body: {} })).status).to.equal(400);
    });

    it('the same routes exist for assets, conversations and skills (404 for an unknown item)', async () => {
      const { body: project } = await create(alice, { title: 'Generic' });
      for (const [segment, field] of [
        ['assets', 'asset_id'],
        ['conversations', 'conversation_id'],
        ['skills', 'skill_id'],
      ]) {
        const missing = await ctx.server.request('post', `/projects/${project.id}/${segment}`, {
          token: alice.token,
          body: { [field!]: '00000000-0000-4000-8000-000000000000' },
        });
        expect(missing.status, segment).to.equal(404);
        const list = await ctx.server.request('get', `/projects/${project.id}/${segment}`, { token: alice.token });
        expect(list.body, segment).to.deep.equal({ items: [], next_cursor: null });
      }
      const [asset] = await ctx.db('assets').insert({ organization_id: org, created_by_id: alice.id, type: 'text' }).returning('id');
      const added = await ctx.server.request('post', `/projects/${project.id}/assets`, { token: alice.token, body: { asset_id: asset.id } });
      expect(added.status).to.equal(201);
      expect(added.body).to.include({ asset_id: asset.id, via: 'reference' });
    });
  });
});
