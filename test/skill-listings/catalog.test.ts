import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { addMember, createOrganization, createSkill, newUser } from '../support/factories.ts';
import { useServer } from '../support/suite.ts';
import { draftListing, expectError, newOperator, publishedListing, show } from './helpers.ts';

describe('skill catalog', () => {
  const ctx = useServer({}, { pool: 4 });

  const add = (token: string, slug: string, organization_id: string) =>
    ctx.server.request('post', `/skill-catalog/${slug}/add`, { token, body: { organization_id } });

  it('GET /skill-catalog: published only; q over title, summary and name; category; rank, then uses, then id; keyset pages', async () => {
    const alice = newUser();
    const operator = newOperator();
    const word = `zq${randomUUID().slice(0, 6)}`;
    const byTitle = await publishedListing(ctx.server, alice, { title: `The ${word} title` });
    const bySummary = await publishedListing(ctx.server, alice, { summary: `About ${word.toUpperCase()}`, categories: ['video'] });
    const byName = await draftListing(ctx.server, alice, { title: 'Plain', summary: 'Plain', categories: ['social'] }, { name: `Named ${word}` });
    await ctx.server.request('post', `/skill-listings/${byName.listing.id}/status`, { token: alice.token, body: { status: 'published' } });
    const plain = await publishedListing(ctx.server, alice, { title: `Another ${word}` });
    await draftListing(ctx.server, alice, { title: `Draft ${word}` });
    const retired = await publishedListing(ctx.server, alice, { title: `Retired ${word}` });
    await ctx.server.request('post', `/skill-listings/${retired.listing.id}/status`, { token: alice.token, body: { status: 'retired' } });
    await publishedListing(ctx.server, alice, { title: 'Unrelated listing' });

    const ranked = await ctx.server.request('patch', `/skill-listings/${bySummary.listing.id}`, { token: operator.token, body: { rank: 3 } });
    expect(ranked.status, show(ranked)).to.equal(200);
    const bob = newUser();
    const bobs = await createOrganization(ctx.server, bob);
    expect((await add(bob.token, byName.listing.slug, bobs)).status).to.equal(201);

    const expected = [bySummary.listing.id, byName.listing.id, ...[byTitle.listing.id, plain.listing.id].sort()];
    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await ctx.server.request('get', '/skill-catalog', { token: bob.token, query: { q: word, limit: 1, cursor } });
      expect(page.status, show(page)).to.equal(200);
      expect(page.body.items.length).to.be.at.most(1);
      seen.push(...page.body.items.map((l: { id: string }) => l.id));
      cursor = page.body.next_cursor ?? undefined;
    } while (cursor);
    expect(seen).to.deep.equal(expected);
    const video = await ctx.server.request('get', '/skill-catalog', { token: bob.token, query: { q: word, category: 'video' } });
    expect(video.body.items.map((l: { id: string }) => l.id)).to.deep.equal([bySummary.listing.id]);
    expect(video.body.items[0]).to.include({ rank: 3, status: 'published' });
  });

  it('GET /skill-catalog/{slug}: a published listing to anyone signed in; drafts and retired ones are 404, even to their author', async () => {
    const alice = newUser();
    const bob = newUser();
    const { listing } = await publishedListing(ctx.server, alice);
    const got = await ctx.server.request('get', `/skill-catalog/${listing.slug}`, { token: bob.token });
    expect(got.status, show(got)).to.equal(200);
    expect(got.body).to.deep.equal({ listing });
    const { listing: draft } = await draftListing(ctx.server, alice);
    expectError(await ctx.server.request('get', `/skill-catalog/${draft.slug}`, { token: alice.token }), 404, 'not_found');
    await ctx.server.request('post', `/skill-listings/${listing.id}/status`, { token: alice.token, body: { status: 'retired' } });
    expectError(await ctx.server.request('get', `/skill-catalog/${listing.slug}`, { token: bob.token }), 404, 'not_found');
  });

  it('POST /skill-catalog/{slug}/add: a community skill with listing_id and listing_version, uses + 1; 403 outside; 404 unpublished; 409 on a taken name', async () => {
    const alice = newUser({ name: 'Alice Author' });
    const bob = newUser();
    const { listing } = await publishedListing(ctx.server, alice);
    const organization = await createOrganization(ctx.server, bob);
    const res = await add(bob.token, listing.slug, organization);
    expect(res.status, show(res)).to.equal(201);
    expect(Object.keys(res.body)).to.deep.equal(['skill']);
    expect(res.body.skill).to.include({
      organization_id: organization,
      source: 'community',
      name: listing.name,
      description: listing.description,
      body: listing.body,
      author: 'Alice Author',
      listing_id: listing.id,
      listing_version: 1,
      created_by_id: bob.id,
      visibility: 'private',
    });
    expect(res.body.skill.files).to.deep.equal(listing.files);
    expect(await ctx.db('skill_listings').where({ id: listing.id }).first('uses')).to.deep.equal({ uses: 1 });
    expect(await ctx.db('skill_versions').where({ skill_id: res.body.skill.id }).pluck('version')).to.deep.equal([1]);
    expect(await ctx.db('activity_events').where({ subject_id: res.body.skill.id }).pluck('action')).to.deep.equal(['skill.created']);
    const read = await ctx.server.request('get', `/skills/${res.body.skill.id}`, { token: bob.token });
    expect(read.body).to.deep.equal(res.body);

    expectError(await add(bob.token, listing.slug, organization), 409, 'conflict', 'name');
    const outsider = newUser();
    expectError(await add(outsider.token, listing.slug, organization), 403, 'forbidden');
    expectError(await add(outsider.token, listing.slug, randomUUID()), 403, 'forbidden');
    const restricted = newUser();
    await ctx.db('organization_roles').insert({ organization_id: organization, key: 'viewers_only', name: 'Viewers only', permissions: ['members.view'] });
    await addMember(ctx.db, organization, restricted, 'viewers_only');
    expectError(await add(restricted.token, listing.slug, organization), 403, 'forbidden');
    const { listing: draft } = await draftListing(ctx.server, alice);
    expectError(await add(bob.token, draft.slug, organization), 404, 'not_found');
    expect(await ctx.db('skill_listings').where({ id: listing.id }).first('uses')).to.deep.equal({ uses: 1 });
  });

  it('POST /skills/{skill_id}/listing-update: the latest listing version as a new skill version, the old one restorable; 409 when current or not from a listing', async () => {
    const alice = newUser();
    const bob = newUser();
    const { listing } = await publishedListing(ctx.server, alice);
    const organization = await createOrganization(ctx.server, bob);
    const added = (await add(bob.token, listing.slug, organization)).body.skill;
    const update = (token = bob.token, id = added.id) => ctx.server.request('post', `/skills/${id}/listing-update`, { token });

    expectError(await update(), 409, 'conflict', 'listing_version');
    const own = await createSkill(ctx.server, bob, organization);
    expectError(await update(bob.token, own.id), 409, 'conflict', 'listing_id');
    expectError(await update(alice.token), 404, 'not_found');

    const edited = await ctx.server.request('patch', `/skill-listings/${listing.id}`, { token: alice.token, body: { body: 'Version two body' } });
    expect(edited.body.listing.version).to.equal(2);
    const res = await update();
    expect(res.status, show(res)).to.equal(200);
    expect(res.body.skill).to.include({ id: added.id, body: 'Version two body', listing_version: 2, source: 'community' });
    expectError(await update(), 409, 'conflict', 'listing_version');

    const versions = await ctx.server.request('get', `/skills/${added.id}/versions`, { token: bob.token });
    expect(versions.body.items.map((v: { version: number; body: string; current: boolean }) => [v.version, v.body, v.current])).to.deep.equal([
      [2, 'Version two body', true],
      [1, listing.body, false],
    ]);
    const first = versions.body.items[1];
    const restored = await ctx.server.request('post', `/skills/${added.id}/versions/${first.id}/restore`, { token: bob.token });
    expect(restored.status, show(restored)).to.equal(200);
    expect(restored.body.skill).to.include({ body: listing.body });
    expect(await ctx.db('activity_events').where({ subject_id: added.id }).orderBy('created_at').pluck('action')).to.deep.equal([
      'skill.created',
      'skill.listing_updated',
      'skill.version_restored',
    ]);
  });
});
