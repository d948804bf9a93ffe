import { createHash } from 'node:crypto';
import { expect } from 'chai';
import { createOrganization, createSkill, newUser } from '../support/factories.ts';
import { useServer } from '../support/suite.ts';
import { catalogReady, draftListing, expectError, newOperator, publishedListing, show } from './helpers.ts';

const listingKeys = [
  'author',
  'body',
  'categories',
  'cover_url',
  'created_at',
  'created_by',
  'description',
  'examples',
  'files',
  'id',
  'license',
  'name',
  'published_at',
  'rank',
  'slug',
  'source_url',
  'status',
  'summary',
  'title',
  'updated_at',
  'updated_by',
  'uses',
  'verified',
  'version',
];

describe('skill listings', () => {
  const ctx = useServer({}, { pool: 4 });

  it('POST /skill-listings copies the skill into a draft listing (spec 2.6 fields, version 1, author and people)', async () => {
    const alice = newUser({ name: 'Alice Van Dyke' });
    const organization = await createOrganization(ctx.server, alice);
    const files = [{ path: 'a.md', content: 'A' }];
    const skill = await createSkill(ctx.server, alice, organization, { name: 'Post Writer', description: 'Writes posts', body: 'Write a post.', files });
    const res = await ctx.server.request('post', '/skill-listings', { token: alice.token, body: { skill_id: skill.id, categories: ['social'] } });
    expect(res.status, show(res)).to.equal(201);
    expect(Object.keys(res.body)).to.deep.equal(['listing']);
    const { id, created_at, updated_at, slug, created_by, updated_by, ...rest } = res.body.listing;
    expect(Object.keys(res.body.listing).sort()).to.deep.equal(listingKeys);
    expect(slug).to.match(/^post-writer(-\d+)?$/);
    expect(updated_at).to.equal(created_at);
    expect(rest).to.deep.equal({
      status: 'draft',
      title: 'Post Writer',
      summary: 'Writes posts',
      categories: ['social'],
      cover_url: null,
      examples: [],
      author: 'Alice Van Dyke',
      verified: false,
      license: null,
      source_url: null,
      name: 'Post Writer',
      description: 'Writes posts',
      body: 'Write a post.',
      version: 1,
      rank: 0,
      published_at: null,
      files,
      uses: 0,
    });
    const hash = createHash('sha256').update(alice.email.toLowerCase()).digest('hex');
    const person = {
      id: alice.id,
      first_name: 'Alice',
      last_name: 'Van Dyke',
      email: alice.email,
      image_url: `https://www.gravatar.com/avatar/${hash}?d=identicon`,
    };
    expect(created_by).to.deep.equal(person);
    expect(updated_by).to.deep.equal(person);
    const got = await ctx.server.request('get', `/skill-listings/${id}`, { token: alice.token });
    expect(got.body).to.deep.equal(res.body);
  });

  it('slugs: made from the title when omitted (suffixed when taken); a taken slug asked for is 409 naming slug', async () => {
    const alice = newUser();
    const first = await draftListing(ctx.server, alice, { title: 'Ünïque Café Skill!' });
    expect(first.listing.slug).to.match(/^unique-cafe-skill(-\d+)?$/);
    const second = await ctx.server.request('post', '/skill-listings', { token: alice.token, body: { skill_id: first.skill.id, title: 'Ünïque Café Skill!' } });
    expect(second.status, show(second)).to.equal(201);
    expect(second.body.listing.slug).to.not.equal(first.listing.slug);
    const taken = await ctx.server.request('post', '/skill-listings', { token: alice.token, body: { skill_id: first.skill.id, slug: first.listing.slug } });
    expectError(taken, 409, 'conflict', 'slug');
    const malformed = await ctx.server.request('post', '/skill-listings', { token: alice.token, body: { skill_id: first.skill.id, slug: 'Not A Slug' } });
    expectError(malformed, 400, 'validation_failed', 'slug');
  });

  it('a skill the caller cannot read is 404; a skill whose files are not [{path, content}] is 409 naming files', async () => {
    const alice = newUser();
    const bob = newUser();
    const { skill } = await draftListing(ctx.server, alice);
    const hidden = await ctx.server.request('post', '/skill-listings', { token: bob.token, body: { skill_id: skill.id } });
    expectError(hidden, 404, 'not_found');
    const odd = await draftListing(ctx.server, alice).then(async ({ organization }) =>
      createSkill(ctx.server, alice, organization, { files: { not: 'a list' } }),
    );
    const res = await ctx.server.request('post', '/skill-listings', { token: alice.token, body: { skill_id: odd.id } });
    expectError(res, 409, 'conflict', 'files');
  });

  it('status: draft → published → retired → published; other moves are 409 naming status; published_at is set once', async () => {
    const alice = newUser();
    const { listing } = await draftListing(ctx.server, alice, catalogReady);
    const move = (status: string) => ctx.server.request('post', `/skill-listings/${listing.id}/status`, { token: alice.token, body: { status } });
    for (const status of ['draft', 'retired']) {
      const res = await move(status);
      expectError(res, 409, 'conflict', 'status');
      expect(res.body.message).to.include('published');
    }
    const published = await move('published');
    expect(published.status, show(published)).to.equal(200);
    expect(published.body.listing.status).to.equal('published');
    const firstPublished = published.body.listing.published_at;
    expect(firstPublished).to.be.a('string');
    expectError(await move('published'), 409, 'conflict', 'status');
    expectError(await move('draft'), 409, 'conflict', 'status');
    const retired = await move('retired');
    expect(retired.body.listing).to.include({ status: 'retired', published_at: firstPublished });
    expectError(await move('draft'), 409, 'conflict', 'status');
    const again = await move('published');
    expect(again.body.listing).to.include({ status: 'published', published_at: firstPublished });
  });

  it('publishing needs title, summary, a category, name and body: 409 naming the first missing one', async () => {
    const alice = newUser();
    const { listing } = await draftListing(ctx.server, alice, { summary: '' });
    const publish = () => ctx.server.request('post', `/skill-listings/${listing.id}/status`, { token: alice.token, body: { status: 'published' } });
    expectError(await publish(), 409, 'conflict', 'summary');
    await ctx.server.request('patch', `/skill-listings/${listing.id}`, { token: alice.token, body: { summary: 'Now summarised' } });
    expectError(await publish(), 409, 'conflict', 'categories');
    await ctx.server.request('patch', `/skill-listings/${listing.id}`, { token: alice.token, body: { categories: ['research'], body: '   ' } });
    expectError(await publish(), 409, 'conflict', 'body');
    await ctx.server.request('patch', `/skill-listings/${listing.id}`, { token: alice.token, body: { body: 'Research it.' } });
    expect((await publish()).status).to.equal(200);
    // A published listing keeps what the catalog shows.
    const blanked = await ctx.server.request('patch', `/skill-listings/${listing.id}`, { token: alice.token, body: { categories: [] } });
    expectError(blanked, 409, 'conflict', 'categories');
  });

  it('PATCH: catalog fields keep the version, content changes bump it; a retired listing is 409 naming status', async () => {
    const alice = newUser();
    const { listing } = await publishedListing(ctx.server, alice);
    const patch = (body: Record<string, unknown>) => ctx.server.request('patch', `/skill-listings/${listing.id}`, { token: alice.token, body });
    const catalogOnly = await patch({ title: 'Better title', examples: ['Write about cats'], license: 'MIT', source_url: 'https://example.com/skill' });
    expect(catalogOnly.status, show(catalogOnly)).to.equal(200);
    expect(catalogOnly.body.listing).to.include({ title: 'Better title', license: 'MIT', source_url: 'https://example.com/skill', version: 1 });
    expect(catalogOnly.body.listing.examples).to.deep.equal(['Write about cats']);
    const same = await patch({ body: listing.body });
    expect(same.body.listing.version).to.equal(1);
    const content = await patch({ body: 'A new body', files: [{ path: 'b.md', content: 'B' }] });
    expect(content.body.listing).to.include({ body: 'A new body', version: 2 });
    expect(content.body.listing.files).to.deep.equal([{ path: 'b.md', content: 'B' }]);
    await ctx.server.request('post', `/skill-listings/${listing.id}/status`, { token: alice.token, body: { status: 'retired' } });
    expectError(await patch({ title: 'Too late' }), 409, 'conflict', 'status');
  });

  it('author vs operator vs others: drafts are 404 to others, published ones 403 to change; verified and rank are operators’ (403 naming the field)', async () => {
    const alice = newUser();
    const bob = newUser();
    const operator = newOperator();
    const draft = (await draftListing(ctx.server, alice, catalogReady)).listing;
    const published = (await publishedListing(ctx.server, alice)).listing;

    expectError(await ctx.server.request('get', `/skill-listings/${draft.id}`, { token: bob.token }), 404, 'not_found');
    expectError(await ctx.server.request('patch', `/skill-listings/${draft.id}`, { token: bob.token, body: { title: 'Mine' } }), 404, 'not_found');
    expectError(await ctx.server.request('post', `/skill-listings/${draft.id}/status`, { token: bob.token, body: { status: 'published' } }), 404, 'not_found');
    expect((await ctx.server.request('get', `/skill-listings/${published.id}`, { token: bob.token })).status).to.equal(200);
    expectError(await ctx.server.request('patch', `/skill-listings/${published.id}`, { token: bob.token, body: { title: 'Mine' } }), 403, 'forbidden');
    expectError(
      await ctx.server.request('post', `/skill-listings/${published.id}/status`, { token: bob.token, body: { status: 'retired' } }),
      403,
      'forbidden',
    );

    for (const field of ['verified', 'rank'] as const) {
      const body = { [field]: field === 'verified' ? true : 5 };
      expectError(await ctx.server.request('patch', `/skill-listings/${draft.id}`, { token: alice.token, body }), 403, 'forbidden', field);
    }
    const moderated = await ctx.server.request('patch', `/skill-listings/${draft.id}`, { token: operator.token, body: { verified: true, rank: 7 } });
    expect(moderated.status, show(moderated)).to.equal(200);
    expect(moderated.body.listing).to.include({ verified: true, rank: 7, version: 1 });
    expect(moderated.body.listing.updated_by.id).to.equal(operator.id);
    expect(moderated.body.listing.created_by.id).to.equal(alice.id);
    const retired = await ctx.server.request('post', `/skill-listings/${published.id}/status`, { token: operator.token, body: { status: 'retired' } });
    expect(retired.body.listing.status).to.equal('retired');
    expectError(await ctx.server.request('get', `/skill-listings/${published.id}`, { token: bob.token }), 404, 'not_found');
  });

  it('GET /skill-listings: own listings only (operators: all), status filter, keyset pages', async () => {
    const alice = newUser();
    const bob = newUser();
    const operator = newOperator();
    const { listing: first } = await draftListing(ctx.server, alice, catalogReady);
    const { listing: second } = await publishedListing(ctx.server, alice);
    const { listing: third } = await draftListing(ctx.server, alice);
    const { listing: bobs } = await draftListing(ctx.server, bob);

    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await ctx.server.request('get', '/skill-listings', { token: alice.token, query: { limit: 2, cursor } });
      expect(page.status, show(page)).to.equal(200);
      seen.push(...page.body.items.map((l: { id: string }) => l.id));
      cursor = page.body.next_cursor ?? undefined;
    } while (cursor);
    expect(seen).to.deep.equal([third.id, second.id, first.id]);
    const published = await ctx.server.request('get', '/skill-listings', { token: alice.token, query: { status: 'published' } });
    expect(published.body.items.map((l: { id: string }) => l.id)).to.deep.equal([second.id]);
    const all = await ctx.server.request('get', '/skill-listings', { token: operator.token, query: { limit: 100 } });
    const ids = all.body.items.map((l: { id: string }) => l.id);
    expect(ids).to.include.members([first.id, second.id, third.id, bobs.id]);
  });
});
