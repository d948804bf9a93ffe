import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { createAsset, createCanvas, createConversation, createOrganization, createProject, createSkill, newMember, newUser } from '../support/factories.ts';
import { useServer } from '../support/suite.ts';

const itemKeys = ['created_at', 'created_by_id', 'id', 'subtype', 'title', 'type', 'updated_at', 'visibility'];

describe('library and documents', () => {
  const ctx = useServer({}, { pool: 4 });

  /** Owner carol (reads everything as organization owner); alice and bob are plain members. */
  async function workspace() {
    const carol = newUser();
    const org = await createOrganization(ctx.server, carol);
    const alice = await newMember(ctx.db, org);
    const bob = await newMember(ctx.db, org);
    const { server } = ctx;
    const ids = {
      project: (await createProject(server, alice, org, { title: 'Spring launch' })).id,
      doc: (await createAsset(server, alice, org, { type: 'document', title: 'Launch brief', content: 'Hello' })).id,
      image: (await createAsset(server, alice, org, { type: 'image', title: 'Launch hero', url: 'https://example.com/a.png' })).id,
      canvas: (await createCanvas(server, alice, org, { title: 'Launch board', visibility: 'workspace' })).id,
      conversation: (await createConversation(server, alice, org, { title: 'Launch chat' })).id,
      skill: (await createSkill(server, alice, org, { name: 'Launch voice' })).id,
      bobs: (await createConversation(server, bob, org, { title: 'Bob notes' })).id,
    };
    return { carol, alice, bob, org, ids };
  }

  it('lists what the caller can read across kinds, most recently updated first, with filters', async () => {
    const { alice, bob, org, ids } = await workspace();
    const res = await ctx.server.request('get', '/library', { token: alice.token, query: { organization_id: org } });
    expect(res.status).to.equal(200);
    expect(res.body.next_cursor).to.equal(null);
    expect(res.body.items.map((i: any) => [i.type, i.id])).to.deep.equal([
      ['skill', ids.skill],
      ['conversation', ids.conversation],
      ['canvas', ids.canvas],
      ['asset', ids.image],
      ['asset', ids.doc],
      ['project', ids.project],
    ]);
    const doc = res.body.items.find((i: any) => i.id === ids.doc);
    expect(Object.keys(doc).sort()).to.deep.equal(itemKeys);
    expect(doc).to.include({ type: 'asset', title: 'Launch brief', subtype: 'document', visibility: 'private', created_by_id: alice.id });
    expect(res.body.items.find((i: any) => i.id === ids.skill)).to.include({ title: 'Launch voice', subtype: null });

    // Bob reads his own chat and the workspace canvas only.
    const bobs = await ctx.server.request('get', '/library', { token: bob.token, query: { organization_id: org } });
    expect(bobs.body.items.map((i: any) => i.id)).to.deep.equal([ids.bobs, ids.canvas]);

    await ctx.server.request('patch', `/conversations/${ids.conversation}`, { token: alice.token, body: { title: 'Launch chat v2' } });
    const moved = await ctx.server.request('get', '/library', { token: alice.token, query: { organization_id: org, types: 'conversation,asset' } });
    expect(moved.body.items.map((i: any) => i.id)).to.deep.equal([ids.conversation, ids.image, ids.doc]);
    const search = await ctx.server.request('get', '/library', { token: alice.token, query: { organization_id: org, search: 'BOARD' } });
    expect(search.body.items.map((i: any) => i.id)).to.deep.equal([ids.canvas]);

    await ctx.server.request('delete', `/skills/${ids.skill}`, { token: alice.token });
    const afterDelete = await ctx.server.request('get', '/library', { token: alice.token, query: { organization_id: org, types: 'skill' } });
    expect(afterDelete.body.items).to.deep.equal([]);

    const bad = await ctx.server.request('get', '/library', { token: alice.token, query: { organization_id: org, types: 'asset,widget' } });
    expect(bad.status).to.equal(400);
    expect(bad.body.message).to.match(/^query\.types: "widget" is not a library type/);
    expect((await ctx.server.request('get', '/library', { token: alice.token })).status).to.equal(400);
    const stranger = newUser();
    expect((await ctx.server.request('get', '/library', { token: stranger.token, query: { organization_id: org } })).body).to.deep.equal({
      items: [],
      next_cursor: null,
    });
  });

  it('pages by (updated_at, id): every item once across pages', async () => {
    const { carol, org } = await workspace();
    await ctx.db.raw(
      `INSERT INTO conversations (organization_id, created_by_id, title, updated_at) SELECT ?, ?, 'bulk', now() - interval '1 hour' FROM generate_series(1, 13)`,
      [org, carol.id],
    );
    const expected = new Set<string>(
      (await ctx.server.request('get', '/library', { token: carol.token, query: { organization_id: org, limit: 100 } })).body.items.map((i: any) => i.id),
    );
    expect(expected.size).to.equal(20);
    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await ctx.server.request('get', '/library', { token: carol.token, query: { organization_id: org, limit: 3, cursor } });
      expect(page.status).to.equal(200);
      seen.push(...page.body.items.map((i: any) => i.id));
      cursor = page.body.next_cursor ?? undefined;
    } while (cursor);
    expect(seen.length).to.equal(20);
    expect(new Set(seen)).to.deep.equal(expected);
  });

  it('GET /documents/{doc_id}/access: the record of a document asset or a canvas, 404 otherwise', async () => {
    const { alice, bob, ids } = await workspace();
    const res = await ctx.server.request('get', `/documents/${ids.doc}/access`, { token: alice.token });
    expect(res.status).to.equal(200);
    expect(res.body).to.deep.include({
      resource_type: 'asset',
      resource_id: ids.doc,
      owner_id: alice.id,
      role: 'owner',
      shared: false,
      grants: [],
      inherited: [],
    });
    expect(res.body.capabilities).to.deep.equal({ can_edit: true, can_manage_people: true, can_change_general_access: true, can_delete: true });
    const same = await ctx.server.request('get', `/access/asset/${ids.doc}`, { token: alice.token });
    expect(res.body).to.deep.equal(same.body);
    const missing = await ctx.server.request('get', `/documents/${randomUUID()}/access`, { token: alice.token });
    expect(missing.status).to.equal(404);
    expect(missing.body).to.deep.equal({ code: 'not_found', message: 'document not found', data: { issues: [] } });
    const image = await ctx.server.request('get', `/documents/${ids.image}/access`, { token: alice.token });
    expect(image.status).to.equal(404);
    expect(image.body).to.deep.equal(missing.body);
    const unreadable = await ctx.server.request('get', `/documents/${ids.doc}/access`, { token: bob.token });
    expect(unreadable.status).to.equal(404);
    expect(unreadable.body).to.deep.equal(missing.body);
    expect((await ctx.server.request('get', '/documents/nope/access', { token: alice.token })).status).to.equal(400);

    // A canvas is a document too: its own access record, readable by those who can read the canvas.
    for (const user of [alice, bob]) {
      const canvas = await ctx.server.request('get', `/documents/${ids.canvas}/access`, { token: user.token });
      expect(canvas.status).to.equal(200);
      expect(canvas.body).to.deep.equal((await ctx.server.request('get', `/access/canvas/${ids.canvas}`, { token: user.token })).body);
      expect(canvas.body).to.deep.include({ resource_type: 'canvas', resource_id: ids.canvas, owner_id: alice.id });
    }
    const outsider = await ctx.server.request('get', `/documents/${ids.canvas}/access`, { token: newUser().token });
    expect(outsider.body).to.deep.equal(missing.body);
  });
});
