import { expect } from 'chai';
import { insertProject } from '../access/fixtures.ts';
import { addMember, createOrganization } from '../support/organizations.ts';
import { newUser, type TestUser } from '../support/server.ts';
import { useServer } from '../support/suite.ts';

describe('GET /conversations', () => {
  const ctx = useServer({}, { pool: 4 });

  async function create(user: TestUser, body: Record<string, unknown>): Promise<string> {
    const res = await ctx.server.request('post', '/conversations', { token: user.token, body });
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    return res.body.id;
  }
  const ids = (res: { body: { items: { id: string }[] } }) => res.body.items.map((c) => c.id);

  it('filters mine / shared / involved / all exactly as documented, with list extras', async () => {
    const alice = newUser();
    const bob = newUser();
    const org = await createOrganization(ctx.server, alice);
    await addMember(ctx.db, org, bob);
    const project = await insertProject(ctx.db, org, alice);
    await ctx.server.request('post', `/access/project/${project}/grants`, { token: alice.token, body: { user_id: bob.id, role: 'viewer' } });
    const bobsOwn = await create(bob, { organization_id: org, title: 'Bob own' });
    const granted = await create(alice, { organization_id: org, title: 'Granted to Bob' });
    await ctx.server.request('post', `/access/chat_conversation/${granted}/grants`, { token: alice.token, body: { user_id: bob.id, role: 'editor' } });
    const workspace = await create(alice, { organization_id: org, title: 'Open to workspace', visibility: 'workspace' });
    const inProject = await create(alice, { organization_id: org, title: 'In project', project_id: project });
    await create(alice, { organization_id: org, title: 'Alice private' });

    const list = (query: Record<string, string>) =>
      ctx.server.request('get', '/conversations', { token: bob.token, query: { organization_id: org, ...query } });
    const all = await list({});
    expect(all.status).to.equal(200);
    expect(ids(all)).to.deep.equal([inProject, workspace, granted, bobsOwn]);
    expect(all.body.next_cursor).to.equal(null);
    expect(ids(await list({ filter: 'all' }))).to.deep.equal(ids(all));
    expect(ids(await list({ filter: 'mine' }))).to.deep.equal([bobsOwn]);
    expect(ids(await list({ filter: 'shared' }))).to.deep.equal([granted]);
    expect(ids(await list({ filter: 'involved' }))).to.deep.equal([granted, bobsOwn]);
    const extras = Object.fromEntries(all.body.items.map((c: any) => [c.title, [c.shared, c.can_edit, c.can_delete]]));
    expect(extras).to.deep.equal({
      'In project': [false, false, false],
      'Open to workspace': [true, false, false],
      'Granted to Bob': [true, true, false],
      'Bob own': [false, true, true],
    });
    expect(Object.keys(all.body.items[0]).length).to.equal(26);

    expect(ids(await list({ visibility: 'workspace' }))).to.deep.equal([workspace]);
    expect(ids(await list({ created_by: bob.id }))).to.deep.equal([bobsOwn]);
    expect(ids(await list({ project_ids: project }))).to.deep.equal([inProject]);
    expect(ids(await list({ search: 'GRANTED' }))).to.deep.equal([granted]);
    expect(ids(await list({ search: '%' }))).to.deep.equal([]);

    const bad = await list({ filter: 'everything' });
    expect(bad.status).to.equal(400);
    expect(bad.body.data.issues[0].path).to.deep.equal(['filter']);
    const badProjects = await list({ project_ids: `${project},nope` });
    expect(badProjects.status).to.equal(400);
    expect(badProjects.body.message).to.match(/^query\.project_ids: "nope" is not a UUID/);
    const missingOrg = await ctx.server.request('get', '/conversations', { token: bob.token });
    expect(missingOrg.status).to.equal(400);
    expect(missingOrg.body.data.issues[0].path).to.deep.equal(['organization_id']);
    const badCursor = await list({ cursor: 'garbage' });
    expect(badCursor.status).to.equal(400);
    expect((await list({ limit: '0' })).status).to.equal(400);
    expect((await list({ limit: '101' })).status).to.equal(400);
    const stranger = newUser();
    const theirs = await ctx.server.request('get', '/conversations', { token: stranger.token, query: { organization_id: org } });
    expect(theirs.status).to.equal(200);
    expect(theirs.body).to.deep.equal({ items: [], next_cursor: null });
  });

  it('hides scheduled conversations unless include_scheduled=true', async () => {
    const alice = newUser();
    const org = await createOrganization(ctx.server, alice);
    const plain = await create(alice, { organization_id: org });
    const scheduled = await create(alice, { organization_id: org });
    const scheduleId = '00000000-0000-4000-8000-000000000001';
    await ctx.db('conversations').where({ id: scheduled }).update({ schedule_id: scheduleId });
    const hidden = await ctx.server.request('get', '/conversations', { token: alice.token, query: { organization_id: org } });
    expect(ids(hidden)).to.deep.equal([plain]);
    const shown = await ctx.server.request('get', '/conversations', { token: alice.token, query: { organization_id: org, include_scheduled: true } });
    expect(ids(shown)).to.deep.equal([scheduled, plain]);
    expect(shown.body.items[0].schedule_id).to.equal(scheduleId);
    expect(
      (await ctx.server.request('get', '/conversations', { token: alice.token, query: { organization_id: org, include_scheduled: 'yes' } })).status,
    ).to.equal(400);
  });

  it('pages with a keyset cursor: every conversation appears exactly once while others are being created', async () => {
    const alice = newUser();
    const org = await createOrganization(ctx.server, alice);
    // Same created_at for many rows: the id breaks ties, so the cursor must carry both.
    await ctx.db.raw(
      `INSERT INTO conversations (organization_id, created_by_id, title, created_at)
       SELECT ?, ?, 'seed ' || g, now() - ((g / 5) || ' seconds')::interval FROM generate_series(1, 57) g`,
      [org, alice.id],
    );
    const before = new Set<string>(await ctx.db('conversations').where({ organization_id: org }).pluck('id'));
    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      // A conversation is created while each page is read: newer rows sort before the cursor.
      const [page] = await Promise.all([
        ctx.server.request('get', '/conversations', { token: alice.token, query: { organization_id: org, limit: 10, cursor } }),
        create(alice, { organization_id: org, title: `during ${pages}` }),
      ]);
      expect(page.status).to.equal(200);
      seen.push(...ids(page));
      cursor = page.body.next_cursor ?? undefined;
      pages += 1;
    } while (cursor);
    expect(pages).to.equal(6);
    expect(seen.length).to.be.oneOf([57, 58]);
    expect(new Set(seen).size).to.equal(seen.length);
    // Exactly the rows that existed when paging began (a row created during the first read may join; none repeat).
    expect(seen.filter((id) => !before.has(id)).length).to.be.at.most(1);
    expect([...before].every((id) => seen.includes(id))).to.equal(true);
  });
});
