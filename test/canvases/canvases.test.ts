import { expect } from 'chai';
import type { TestUser } from '../support/server.ts';
import { useServer } from '../support/suite.ts';
import { addMember, knownUser, createOrganization } from '../access/fixtures.ts';
import { canvasFields } from '../support/shapes.ts';

describe('canvases', () => {
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

  it('POST /canvases creates (201) with the full shape, defaults and an activity entry', async () => {
    const res = await ctx.server.request('post', '/canvases', { token: bob.token, body: { organization_id: org } });
    expect(res.status).to.equal(201);
    expect(Object.keys(res.body).sort()).to.deep.equal(canvasFields);
    expect(res.body).to.include({
      organization_id: org,
      created_by_id: bob.id,
      title: null,
      visibility: 'private',
      workspace_role: 'viewer',
      project_id: null,
      deleted_at: null,
      deleted_by_id: null,
    });
    expect(await ctx.db('activity_events').where({ subject_id: res.body.id }).pluck('action')).to.deep.equal(['canvas.created']);
  });

  it('POST /canvases with project_id files it into the project (via origin); refuses unusable projects with 400 and writes nothing', async () => {
    const project = await ctx.server.request('post', '/projects', { token: alice.token, body: { organization_id: org, title: 'Home' } });
    const res = await ctx.server.request('post', '/canvases', {
      token: alice.token,
      body: { organization_id: org, title: 'In project', project_id: project.body.id },
    });
    expect(res.status).to.equal(201);
    expect(res.body.project_id).to.equal(project.body.id);
    expect(await ctx.db('project_items').where({ item_id: res.body.id }).select('project_id', 'item_type', 'via')).to.deep.equal([
      { project_id: project.body.id, item_type: 'canvas', via: 'origin' },
    ]);
    const before = await ctx.db('canvases').count<{ count: number }[]>('* as count');
    const unreadable = await ctx.server.request('post', '/canvases', { token: bob.token, body: { organization_id: org, project_id: project.body.id } });
    expect(unreadable.status).to.equal(400);
    expect(unreadable.body.data.issues[0].path).to.deep.equal(['project_id']);
    await ctx.server.request('post', `/access/project/${project.body.id}/grants`, { token: alice.token, body: { user_id: bob.id, role: 'viewer' } });
    const viewerOnly = await ctx.server.request('post', '/canvases', { token: bob.token, body: { organization_id: org, project_id: project.body.id } });
    expect(viewerOnly.status).to.equal(400);
    expect(viewerOnly.body.message).to.match(/^project_id: .*editor/);
    expect((await ctx.db('canvases').count<{ count: number }[]>('* as count'))[0]!.count).to.equal(before[0]!.count);
  });

  it('validates bodies: public, unknown fields, bad project id → 400; non-member → 403', async () => {
    expect((await ctx.server.request('post', '/canvases', { token: bob.token, body: { organization_id: org, visibility: 'public' } })).status).to.equal(400);
    expect((await ctx.server.request('post', '/canvases', { token: bob.token, body: { organization_id: org, shape: 'round' } })).status).to.equal(400);
    expect((await ctx.server.request('post', '/canvases', { token: bob.token, body: { organization_id: org, project_id: 'x' } })).status).to.equal(400);
    expect((await ctx.server.request('post', '/canvases', { token: bob.token, body: {} })).status).to.equal(400);
    const stranger = await knownUser(ctx.db);
    expect((await ctx.server.request('post', '/canvases', { token: stranger.token, body: { organization_id: org } })).status).to.equal(403);
  });

  it('GET, PATCH, DELETE (204), restore (200) with activity; PATCH on a deleted canvas is 409', async () => {
    const { body: canvas } = await ctx.server.request('post', '/canvases', { token: bob.token, body: { organization_id: org, title: 'Sketch' } });
    expect((await ctx.server.request('get', `/canvases/${canvas.id}`, { token: bob.token })).body).to.deep.equal(canvas);
    const patched = await ctx.server.request('patch', `/canvases/${canvas.id}`, { token: bob.token, body: { title: 'Final' } });
    expect(patched.status).to.equal(200);
    expect(patched.body).to.deep.include({ ...canvas, title: 'Final', updated_at: patched.body.updated_at });
    expect((await ctx.server.request('patch', `/canvases/${canvas.id}`, { token: bob.token, body: {} })).status).to.equal(400);
    expect((await ctx.server.request('patch', `/canvases/${canvas.id}`, { token: bob.token, body: { visibility: 'workspace' } })).status).to.equal(400);
    expect((await ctx.server.request('delete', `/canvases/${canvas.id}`, { token: bob.token })).status).to.equal(204);
    const row = await ctx.db('canvases').where({ id: canvas.id }).first();
    expect(row.deleted_by_id).to.equal(bob.id);
    expect((await ctx.server.request('patch', `/canvases/${canvas.id}`, { token: bob.token, body: { title: 'x' } })).status).to.equal(409);
    const restored = await ctx.server.request('post', `/canvases/${canvas.id}/restore`, { token: bob.token });
    expect(restored.status).to.equal(200);
    expect(restored.body).to.include({ deleted_at: null, deleted_by_id: null, title: 'Final' });
    const actions = await ctx.db('activity_events').where({ subject_id: canvas.id }).orderBy('created_at').pluck('action');
    expect(actions).to.deep.equal(['canvas.created', 'canvas.updated', 'canvas.deleted', 'canvas.restored']);
  });

  it('GET /canvases: readable only, deleted filter, search, project filter, keyset pages', async () => {
    const fresh = await knownUser(ctx.db);
    const org2 = await createOrganization(ctx.server, fresh);
    const ids: string[] = [];
    for (let i = 0; i < 5; i++)
      ids.push((await ctx.server.request('post', '/canvases', { token: fresh.token, body: { organization_id: org2, title: `Item ${i}` } })).body.id);
    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await ctx.server.request('get', '/canvases', { token: fresh.token, query: { organization_id: org2, limit: 2, cursor } });
      seen.push(...page.body.items.map((c: { id: string }) => c.id));
      cursor = page.body.next_cursor ?? undefined;
    } while (cursor);
    expect(seen).to.deep.equal([...ids].reverse());
    const search = await ctx.server.request('get', '/canvases', { token: fresh.token, query: { organization_id: org2, search: 'item 3' } });
    expect(search.body.items.map((c: { id: string }) => c.id)).to.deep.equal([ids[3]]);
    await ctx.server.request('delete', `/canvases/${ids[0]}`, { token: fresh.token });
    const deleted = await ctx.server.request('get', '/canvases', { token: fresh.token, query: { organization_id: org2, deleted: true } });
    expect(deleted.body.items.map((c: { id: string }) => c.id)).to.deep.equal([ids[0]]);
    const project = await ctx.server.request('post', '/projects', { token: fresh.token, body: { organization_id: org2, title: 'P' } });
    await ctx.server.request('post', `/projects/${project.body.id}/canvases`, { token: fresh.token, body: { canvas_id: ids[2] } });
    const inProject = await ctx.server.request('get', '/canvases', { token: fresh.token, query: { organization_id: org2, project_id: project.body.id } });
    expect(inProject.body.items.map((c: { id: string }) => c.id)).to.deep.equal([ids[2]]);
    const projects = await ctx.server.request('get', `/canvases/${ids[2]}/projects`, { token: fresh.token });
    expect(projects.status).to.equal(200);
    expect(projects.body.items).to.have.length(1);
    expect(projects.body.items[0]).to.include({ id: project.body.id, title: 'P' });
    expect((await ctx.server.request('get', `/canvases/${ids[2]}/projects`, { token: bob.token })).status).to.equal(404);
  });
});
