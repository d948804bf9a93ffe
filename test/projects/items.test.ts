import { expect } from 'chai';
import type { TestUser } from '../support/server.ts';
import { useServer } from '../support/suite.ts';
import { addMember, createOrganization, knownUser } from '../access/fixtures.ts';
import { assetFields, canvasFields, conversationFields, skillFields } from '../support/shapes.ts';

// Spec 2.2, the canvas, 2.3 and 2.5 (the skill bare, without its envelope).

const ids = (body: { items: { id: string }[] }) => body.items.map((item) => item.id);

describe('projects: the items in a project', () => {
  const ctx = useServer();
  let alice: TestUser;
  let bob: TestUser;
  let dana: TestUser;
  let org: string;

  before(async () => {
    alice = await knownUser(ctx.db);
    bob = await knownUser(ctx.db);
    dana = await knownUser(ctx.db);
    org = await createOrganization(ctx.server, alice);
    await addMember(ctx.db, org, bob);
    await addMember(ctx.db, org, dana);
  });

  const post = async (by: TestUser, path: string, body: Record<string, unknown>) => {
    const res = await ctx.server.request('post', path, { token: by.token, body });
    expect(res.status, `${path} ${JSON.stringify(res.body)}`).to.equal(201);
    return res.body;
  };
  const newProject = (by: TestUser, title = 'Holder') => post(by, '/projects', { organization_id: org, title });
  const list = (by: TestUser, projectId: string, segment: string, query: Record<string, string | number | boolean | undefined> = {}) =>
    ctx.server.request('get', `/projects/${projectId}/${segment}`, { token: by.token, query });

  it('GET /projects/{id}/assets|canvases|conversations|skills answer the items themselves, with every field', async () => {
    const project = await newProject(alice);
    // Two are created inside the project (origin), two are filed afterwards (reference).
    const asset = await post(alice, '/assets', { organization_id: org, type: 'text', title: 'Notes', content: 'hello', project_id: project.id });
    const conversation = await post(alice, '/conversations', { organization_id: org, title: 'Chat', project_id: project.id });
    const canvas = await post(alice, '/canvases', { organization_id: org, title: 'Board' });
    const { skill } = await post(alice, '/skills', { organization_id: org, name: 'Summarize', description: 'Summaries', body: 'Summarize the text.' });
    await post(alice, `/projects/${project.id}/canvases`, { canvas_id: canvas.id });
    await post(alice, `/projects/${project.id}/skills`, { skill_id: skill.id });

    for (const [segment, id, keys] of [
      ['assets', asset.id, assetFields],
      ['canvases', canvas.id, canvasFields],
      ['conversations', conversation.id, conversationFields],
      ['skills', skill.id, skillFields],
    ] as const) {
      const res = await list(alice, project.id, segment);
      expect(res.status, segment).to.equal(200);
      const own = await ctx.server.request('get', `/${segment}/${id}`, { token: alice.token });
      const expected = segment === 'skills' ? own.body.skill : own.body;
      // A conversation in a list carries the list extras of spec 2.3, exactly as GET /conversations shows it.
      const extras = segment === 'conversations' ? { shared: false, can_edit: true, can_delete: true } : {};
      expect(res.body, segment).to.deep.equal({ items: [{ ...expected, ...extras }], next_cursor: null });
      expect(Object.keys(res.body.items[0]).sort(), segment).to.deep.equal([...keys, ...Object.keys(extras)].sort());
    }
    const listedConversation = (await ctx.server.request('get', '/conversations', { token: alice.token, query: { organization_id: org } })).body.items.find(
      (c: { id: string }) => c.id === conversation.id,
    );
    expect((await list(alice, project.id, 'conversations')).body.items[0]).to.deep.equal(listedConversation);
    // Through the project Dana reads it, but neither edits nor deletes it.
    await post(alice, `/access/project/${project.id}/grants`, { user_id: dana.id, role: 'viewer' });
    expect((await list(dana, project.id, 'conversations')).body.items[0]).to.include({
      id: conversation.id,
      shared: false,
      can_edit: false,
      can_delete: false,
    });
    const listed = (await list(alice, project.id, 'skills')).body.items[0];
    expect(listed).to.include({ id: skill.id, name: 'Summarize', source: 'custom', project_scoped: false, organization_id: org });
    expect(listed).not.to.have.property('skill');
    expect((await list(alice, project.id, 'assets')).body.items[0]).to.include({
      id: asset.id,
      type: 'text',
      title: 'Notes',
      content: 'hello',
      visibility: 'private',
    });
  });

  it('lists only items the caller can read, in the query: pages are never short and carry no phantom cursor', async () => {
    const project = await newProject(bob, 'Shared');
    await post(bob, `/access/project/${project.id}/grants`, { user_id: dana.id, role: 'editor' });
    const danas = await post(dana, '/assets', { organization_id: org, type: 'text', title: 'Dana private', project_id: project.id });
    const bobs = await post(bob, '/assets', { organization_id: org, type: 'text', title: 'Bob private', project_id: project.id });
    // While the project is live, it passes access on: Bob reads Dana's private asset through it.
    expect(ids((await list(bob, project.id, 'assets')).body)).to.deep.equal([bobs.id, danas.id]);

    // Deleted, the project stays readable to Bob (its owner) but passes nothing on: Dana's asset is unreadable to him.
    expect((await ctx.server.request('delete', `/projects/${project.id}`, { token: bob.token })).status).to.equal(204);
    expect((await ctx.server.request('get', `/projects/${project.id}`, { token: bob.token })).status).to.equal(200);
    expect((await ctx.server.request('get', `/assets/${danas.id}`, { token: bob.token })).status).to.equal(404);
    const onePage = await list(bob, project.id, 'assets', { limit: 1 });
    expect(onePage.status).to.equal(200);
    expect(onePage.body).to.deep.equal({ items: [(await ctx.server.request('get', `/assets/${bobs.id}`, { token: bob.token })).body], next_cursor: null });
    // Dana holds a direct grant on the (deleted) project: she reads it, and of its assets only her own.
    expect(await list(dana, project.id, 'assets', { limit: 1 }).then((r) => [ids(r.body), r.body.next_cursor])).to.deep.equal([[danas.id], null]);

    // A membership row pointing into another organization (never made by the API) is never listed, even to an owner.
    const carol = await knownUser(ctx.db);
    const elsewhere = await createOrganization(ctx.server, carol);
    const foreign = await post(carol, '/assets', { organization_id: elsewhere, type: 'text' });
    const live = await newProject(alice, 'Guarded');
    await ctx.db('project_items').insert({ project_id: live.id, item_type: 'asset', item_id: foreign.id, via: 'reference' });
    expect((await list(alice, live.id, 'assets')).body).to.deep.equal({ items: [], next_cursor: null });
  });

  it('pages newest filed first (then id), each item exactly once, while more items are filed between pages', async () => {
    const project = await newProject(alice, 'Paged');
    const canvases: string[] = [];
    for (let i = 0; i < 5; i++) canvases.push((await post(alice, '/canvases', { organization_id: org, title: `c${i}` })).id);
    // Filing order, not creation order, decides: filed c3, c1, c4, c0, c2 → listed c2, c0, c4, c1, c3.
    for (const i of [3, 1, 4, 0, 2]) await post(alice, `/projects/${project.id}/canvases`, { canvas_id: canvases[i] });
    const expected = [2, 0, 4, 1, 3].map((i) => canvases[i]!);

    const first = await list(alice, project.id, 'canvases', { limit: 2 });
    expect(ids(first.body)).to.deep.equal(expected.slice(0, 2));
    // Filed while the client pages: they come before the cursor, so later pages neither repeat nor skip anything.
    const late1 = await post(alice, '/canvases', { organization_id: org, title: 'late 1', project_id: project.id });
    const late2 = await post(alice, '/canvases', { organization_id: org, title: 'late 2' });
    await post(alice, `/projects/${project.id}/canvases`, { canvas_id: late2.id });
    const seen = ids(first.body);
    let cursor: string | undefined = first.body.next_cursor;
    while (cursor) {
      const page = await list(alice, project.id, 'canvases', { limit: 2, cursor });
      expect(page.status).to.equal(200);
      seen.push(...ids(page.body));
      cursor = page.body.next_cursor ?? undefined;
    }
    expect(seen).to.deep.equal(expected);
    expect(ids((await list(alice, project.id, 'canvases')).body)).to.deep.equal([late2.id, late1.id, ...expected]);

    // Filed at the same instant: the id breaks the tie, and a page boundary between them holds.
    const tied = await newProject(alice, 'Tied');
    const twins = [(await post(alice, '/canvases', { organization_id: org })).id, (await post(alice, '/canvases', { organization_id: org })).id];
    const at = new Date('2030-01-01T00:00:00.123456Z');
    await ctx.db('project_items').insert(twins.map((id) => ({ project_id: tied.id, item_type: 'canvas', item_id: id, via: 'reference', created_at: at })));
    const a = await list(alice, tied.id, 'canvases', { limit: 1 });
    const b = await list(alice, tied.id, 'canvases', { limit: 1, cursor: a.body.next_cursor });
    expect([...ids(a.body), ...ids(b.body)]).to.deep.equal([...twins].sort().reverse());
    expect(b.body.next_cursor).to.equal(null);
    expect((await list(alice, tied.id, 'canvases', { cursor: 'garbage' })).status).to.equal(400);
  });

  it('deleted=true lists only the deleted items still filed; bad query 400; an unreadable project is 404 like a missing one', async () => {
    const project = await newProject(alice, 'Trash');
    const live = await post(alice, '/canvases', { organization_id: org, title: 'live', project_id: project.id });
    const gone = await post(alice, '/canvases', { organization_id: org, title: 'gone', project_id: project.id });
    expect((await ctx.server.request('delete', `/canvases/${gone.id}`, { token: alice.token })).status).to.equal(204);
    expect(ids((await list(alice, project.id, 'canvases')).body)).to.deep.equal([live.id]);
    expect(ids((await list(alice, project.id, 'canvases', { deleted: false })).body)).to.deep.equal([live.id]);
    const trash = await list(alice, project.id, 'canvases', { deleted: true });
    expect(trash.status).to.equal(200);
    expect(trash.body).to.deep.equal({ items: [(await ctx.server.request('get', `/canvases/${gone.id}`, { token: alice.token })).body], next_cursor: null });
    expect(trash.body.items[0].deleted_by_id).to.equal(alice.id);

    const badFlag = await list(alice, project.id, 'canvases', { deleted: 'maybe' });
    expect(badFlag.status).to.equal(400);
    expect(badFlag.body.data.issues[0].path).to.deep.equal(['deleted']);
    expect((await list(alice, project.id, 'canvases', { colour: 'red' })).status).to.equal(400);
    expect((await list(alice, project.id, 'canvases', { limit: 0 })).status).to.equal(400);

    const missing = await list(alice, '00000000-0000-4000-8000-000000000000', 'assets');
    expect(missing.status).to.equal(404);
    for (const who of [bob, await knownUser(ctx.db)]) {
      const res = await list(who, project.id, 'assets');
      expect(res.status).to.equal(404);
      expect(res.body).to.deep.equal(missing.body);
    }
  });
});
