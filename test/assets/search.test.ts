import { expect } from 'chai';
import { actorFor } from '../../src/access/index.ts';
import { searchAssets } from '../../src/assets/index.ts';
import { addMember, createOrganization } from '../support/organizations.ts';
import { newUser, type TestUser } from '../support/server.ts';
import { useServer } from '../support/suite.ts';

/**
 * GET /assets?q=… and the reusable searchAssets (the chat's asset-search tool): full-text over the
 * title and the text (inline content here, so no worker is needed; extracted file text is the
 * enrichment suite's), ranked, keyset-paged on rank and id, filtered by access in SQL.
 */
describe('assets: full-text search', () => {
  const ctx = useServer();
  let alice: TestUser;
  let bob: TestUser;
  let carol: TestUser;
  let org: string;

  before(async () => {
    alice = newUser();
    org = await createOrganization(ctx.server, alice);
    bob = newUser();
    carol = newUser();
    await addMember(ctx.db, org, bob);
    await addMember(ctx.db, org, carol);
  });

  const create = async (user: TestUser, body: Record<string, unknown>) => {
    const res = await ctx.server.request('post', '/assets', { token: user.token, body: { organization_id: org, type: 'text', ...body } });
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    return res.body.id as string;
  };
  const search = (user: TestUser, query: Record<string, string | number>) =>
    ctx.server.request('get', '/assets', { token: user.token, query: { organization_id: org, ...query } });
  const ids = (body: { items: { id: string }[] }) => body.items.map((item) => item.id);

  it('ranks title matches above text matches, and more occurrences above fewer; each item carries its rank and snippet', async () => {
    const inTitle = await create(bob, { title: 'Lighthouse inventory', content: 'Lamps and lenses.' });
    const often = await create(bob, { title: 'Log', content: 'The lighthouse keeper climbed the lighthouse to light the lighthouse lamp.' });
    const once = await create(bob, { title: 'Coast notes', content: 'We passed a lighthouse on the way.' });
    await create(bob, { title: 'Harbour', content: 'Boats and nets.' });
    const res = await search(bob, { q: 'lighthouses' });
    expect(res.status).to.equal(200);
    expect(ids(res.body)).to.deep.equal([inTitle, often, once]);
    const ranks = res.body.items.map((item: { search: { rank: number } }) => item.search.rank);
    expect(ranks[0]).to.be.greaterThan(ranks[1]);
    expect(ranks[1]).to.be.greaterThan(ranks[2]);
    expect(res.body.items[2].search.snippet).to.equal('passed a <mark>lighthouse</mark>');
    expect(res.body.items[2]).to.deep.include({ id: once, title: 'Coast notes', content: 'We passed a lighthouse on the way.' });
    expect(res.body.next_cursor).to.equal(null);
    // Without q the list stays newest first and its items carry no `search`.
    const plain = await search(bob, { search: 'lighthouse' });
    expect(ids(plain.body)).to.deep.equal([once, often, inTitle]);
    expect(plain.body.items.every((item: object) => !('search' in item))).to.equal(true);
  });

  it('keyset pages on rank and id: every match exactly once, in the order of one big page, equal ranks broken by id', async () => {
    const same: string[] = [];
    for (let i = 0; i < 5; i++) same.push(await create(bob, { title: 'Memo', content: 'quarterly figures' }));
    const best = await create(bob, { title: 'Quarterly figures', content: 'quarterly figures' });
    const whole = await search(bob, { q: 'quarterly figures', limit: 100 });
    expect(ids(whole.body)).to.deep.equal([best, ...[...same].sort()]);
    const paged: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const res = await search(bob, { q: 'quarterly figures', limit: 2, ...(cursor && { cursor }) });
      expect(res.status).to.equal(200);
      paged.push(...ids(res.body));
      cursor = res.body.next_cursor ?? undefined;
      pages++;
    } while (cursor);
    expect(pages).to.equal(3);
    expect(paged).to.deep.equal(ids(whole.body));
    // A match written meanwhile does not shift the pages: the next one resumes strictly after the last row seen.
    const first = await search(bob, { q: 'quarterly figures', limit: 2 });
    const seen = ids(first.body);
    const late = await create(bob, { title: 'Memo', content: 'quarterly figures' });
    const next = await search(bob, { q: 'quarterly figures', limit: 2, cursor: first.body.next_cursor });
    expect(ids(next.body)).to.deep.equal(
      [...same, late]
        .sort()
        .filter((id) => id > seen[1]!)
        .slice(0, 2),
    );
  });

  it("never returns another member's private asset, nor a deleted one; the organization's admin sees the private one; outsiders get an empty page", async () => {
    const secret = await create(carol, { title: 'Salary bands', content: 'confidential compensation table' });
    const shared = await create(carol, { title: 'Hiring plan', content: 'confidential but shared', visibility: 'workspace' });
    const gone = await create(bob, { title: 'Old', content: 'confidential draft' });
    expect((await ctx.server.request('delete', `/assets/${gone}`, { token: bob.token })).status).to.equal(204);

    expect(ids((await search(bob, { q: 'confidential' })).body)).to.have.members([shared]);
    expect(ids((await search(carol, { q: 'confidential' })).body)).to.have.members([secret, shared]);
    expect(ids((await search(alice, { q: 'confidential' })).body)).to.have.members([secret, shared]);
    const outsider = newUser();
    await createOrganization(ctx.server, outsider);
    const empty = await search(outsider, { q: 'confidential' });
    expect(empty.status).to.equal(200);
    expect(empty.body).to.deep.equal({ items: [], next_cursor: null });
    // The same through the reusable function.
    const hits = await searchAssets(ctx.db, actorFor(ctx.db, { userId: bob.id }), { organizationId: org, q: 'confidential', limit: 10 });
    expect(hits).to.deep.equal({
      items: [{ id: shared, title: 'Hiring plan', type: 'text', rank: hits.items[0]!.rank, snippet: '<mark>confidential</mark> but shared' }],
      next_cursor: null,
    });
  });

  it('searchAssets narrows to a project and pages with its cursor', async () => {
    const project = await ctx.server.request('post', '/projects', { token: bob.token, body: { organization_id: org, title: `Atlas ${Date.now()}` } });
    expect(project.status, JSON.stringify(project.body)).to.equal(201);
    const projectId = (project.body.project ?? project.body).id as string;
    const titles = new Map<string, string>();
    for (const title of ['Atlas map one', 'Atlas map two']) titles.set(await create(bob, { title, content: 'cartography', project_id: projectId }), title);
    const filed = [...titles.keys()].sort();
    await create(bob, { title: 'Loose map', content: 'cartography' });
    const actor = actorFor(ctx.db, { userId: bob.id });
    const first = await searchAssets(ctx.db, actor, { organizationId: org, q: 'cartography', projectId, limit: 1 });
    expect(first.items.map((hit) => hit.id)).to.deep.equal([filed[0]]);
    expect(first.next_cursor).to.be.a('string');
    const second = await searchAssets(ctx.db, actor, { organizationId: org, q: 'cartography', projectId, limit: 1, cursor: first.next_cursor! });
    expect(second).to.deep.equal({
      items: [{ id: filed[1], title: titles.get(filed[1]!), type: 'text', rank: first.items[0]!.rank, snippet: '<mark>cartography</mark>' }],
      next_cursor: null,
    });
  });

  it('names the field and the rule for bad searches', async () => {
    const tooLong = await search(bob, { q: 'x'.repeat(201) });
    expect(tooLong.status).to.equal(400);
    expect(tooLong.body.data.issues[0].path).to.deep.equal(['q']);
    const deleted = await search(bob, { q: 'anything', deleted: 'true' });
    expect(deleted.status).to.equal(400);
    expect(deleted.body.message).to.equal('query.q: cannot be combined with deleted=true (search finds live assets only)');
    // A cursor of the newest-first list is not a search cursor.
    await create(bob, { title: 'One' });
    await create(bob, { title: 'Two' });
    const listCursor = (await search(bob, { limit: 1 })).body.next_cursor as string;
    const mixed = await search(bob, { q: 'anything', cursor: listCursor });
    expect(mixed.status).to.equal(400);
    expect(mixed.body.data.issues[0].path).to.deep.equal(['cursor']);
    // Only stop words: a valid query that matches nothing.
    const stop = await search(bob, { q: 'the' });
    expect(stop.status).to.equal(200);
    expect(stop.body).to.deep.equal({ items: [], next_cursor: null });
  });
});
