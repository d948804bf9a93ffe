import { expect } from 'chai';
import { addMember, createOrganization, createSkill, newMember, newUser, type TestUser } from '../support/factories.ts';
import { useServer } from '../support/suite.ts';
import { catalogReady, expectError, newOperator, show } from './helpers.ts';

/**
 * Putting an organization's skill into the global catalog takes edit rights on the skill and the
 * organization permission `skill_listings.publish` (owners and admins; custom roles may hold it):
 * reading the skill is not enough. A listing's status is its author's or an operator's to change,
 * and an author publishing needs those rights as they are at that moment.
 */
describe('skill listings: who may publish', () => {
  const ctx = useServer();

  let org: string;
  let skillId: string;
  let users: Record<string, TestUser>;

  const grant = async (by: TestUser, user: TestUser, role: 'viewer' | 'editor') => {
    const res = await ctx.server.request('post', `/access/skill/${skillId}/grants`, { token: by.token, body: { user_id: user.id, role } });
    expect(res.status, show(res)).to.equal(201);
    return res.body;
  };
  const list = (user: TestUser) => ctx.server.request('post', '/skill-listings', { token: user.token, body: { skill_id: skillId, ...catalogReady } });
  const setStatus = (user: TestUser, listingId: string, status: string) =>
    ctx.server.request('post', `/skill-listings/${listingId}/status`, { token: user.token, body: { status } });

  before(async () => {
    const owner = newUser();
    org = await createOrganization(ctx.server, owner);
    await ctx
      .db('organization_roles')
      .insert({ organization_id: org, key: 'publisher', name: 'Publisher', permissions: ['resources.create', 'skill_listings.publish'] });
    users = {
      owner,
      admin: await newMember(ctx.db, org, 'admin'),
      'member without grant': await newMember(ctx.db, org),
      'viewer grant': await newMember(ctx.db, org),
      'editor grant': await newMember(ctx.db, org),
      'publisher, viewer grant': await newMember(ctx.db, org, 'publisher'),
      'publisher, editor grant': await newMember(ctx.db, org, 'publisher'),
      'removed member': await newMember(ctx.db, org),
      outsider: newUser(),
    };
    skillId = (await createSkill(ctx.server, owner, org, { description: 'A skill', body: 'Do the thing.' })).id;
    for (const who of ['viewer grant', 'publisher, viewer grant', 'removed member'] as const) await grant(owner, users[who]!, 'viewer');
    for (const who of ['editor grant', 'publisher, editor grant'] as const) await grant(owner, users[who]!, 'editor');
    const removed = await ctx.server.request('delete', `/organizations/${org}/members/${users['removed member']!.id}`, { token: owner.token });
    expect(removed.status, show(removed)).to.equal(204);
  });

  const table: [string, number, string?][] = [
    ['owner', 201],
    ['admin', 201],
    ['publisher, editor grant', 201],
    ['viewer grant', 403, 'your role on this skill is "viewer"'],
    ['publisher, viewer grant', 403, 'your role on this skill is "viewer"'],
    ['editor grant', 403, 'your role "member" lacks the permission skill_listings.publish'],
    ['member without grant', 404],
    ['removed member', 404],
    ['outsider', 404],
  ];
  for (const [who, status, message] of table) {
    it(`POST /skill-listings — ${who}: ${status}`, async () => {
      const before = await ctx.db('skill_listings').where({ skill_id: skillId }).count({ n: '*' }).first();
      const res = await list(users[who]!);
      expect(res.status, show(res)).to.equal(status);
      const after = await ctx.db('skill_listings').where({ skill_id: skillId }).count({ n: '*' }).first();
      if (status === 201) {
        expect(res.body.listing).to.include({ status: 'draft' });
        expect(res.body.listing.created_by.id).to.equal(users[who]!.id);
        expect(Number(after!.n)).to.equal(Number(before!.n) + 1);
      } else {
        expectError(res, status, status === 404 ? 'not_found' : 'forbidden');
        if (status === 404) expect(res.body.message).to.equal('skill not found');
        else expect(res.body.message).to.include(message);
        expect(Number(after!.n)).to.equal(Number(before!.n));
      }
    });
  }

  it('status: the author or an operator; others 404 for a draft they cannot see, 403 for a published one', async () => {
    const author = users['publisher, editor grant']!;
    const admin = users.admin!;
    const operator = newOperator();
    const draft = (await list(author)).body.listing;
    expectError(await setStatus(admin, draft.id, 'published'), 404, 'not_found');
    expectError(await setStatus(users.owner!, draft.id, 'published'), 404, 'not_found');
    const published = await setStatus(author, draft.id, 'published');
    expect(published.status, show(published)).to.equal(200);
    expect(published.body.listing.status).to.equal('published');
    const refused = await setStatus(admin, draft.id, 'retired');
    expectError(refused, 403, 'forbidden');
    expect(refused.body.message).to.equal('only the listing’s author or an operator may change it');
    expect((await ctx.db('skill_listings').where({ id: draft.id }).first()).status).to.equal('published');
    const retired = await setStatus(operator, draft.id, 'retired');
    expect(retired.status, show(retired)).to.equal(200);
    expect(retired.body.listing.status).to.equal('retired');
    const again = await setStatus(author, draft.id, 'published');
    expect(again.status, show(again)).to.equal(200);
  });

  it('an author who lost the rights since the draft cannot publish it (403 naming status); an operator can', async () => {
    const author = newUser();
    await addMember(ctx.db, org, author, 'publisher');
    const editorGrant = await grant(users.owner!, author, 'editor');
    const lostPermission = (await list(author)).body.listing;
    const lostEditRights = (await list(author)).body.listing;
    const lostMembership = (await list(author)).body.listing;
    const operator = newOperator();

    await ctx.db('organization_members').where({ organization_id: org, user_id: author.id }).update({ role: 'member' });
    const noPermission = await setStatus(author, lostPermission.id, 'published');
    expectError(noPermission, 403, 'forbidden', 'status');
    expect(noPermission.body.message).to.equal(
      'status: publishing needs edit rights on the listing’s skill and the permission skill_listings.publish in its organization',
    );

    await ctx.db('organization_members').where({ organization_id: org, user_id: author.id }).update({ role: 'publisher' });
    const grantId = editorGrant.grant?.id ?? editorGrant.id;
    const res = await ctx.server.request('patch', `/access/skill/${skillId}/grants/${grantId}`, { token: users.owner!.token, body: { role: 'viewer' } });
    expect(res.status, show(res)).to.equal(200);
    expectError(await setStatus(author, lostEditRights.id, 'published'), 403, 'forbidden', 'status');

    await ctx.db('organization_members').where({ organization_id: org, user_id: author.id }).del();
    expectError(await setStatus(author, lostMembership.id, 'published'), 403, 'forbidden', 'status');

    for (const listing of [lostPermission, lostEditRights, lostMembership]) {
      expect((await ctx.db('skill_listings').where({ id: listing.id }).first()).status).to.equal('draft');
      const byOperator = await setStatus(operator, listing.id, 'published');
      expect(byOperator.status, show(byOperator)).to.equal(200);
    }
  });

  it('an author who lost the rights cannot change what the catalog shows of a published listing (403 naming the field); a draft stays theirs to edit', async () => {
    const author = newUser();
    await addMember(ctx.db, org, author, 'publisher');
    await grant(users.owner!, author, 'editor');
    const published = (await list(author)).body.listing;
    const draft = (await list(author)).body.listing;
    expect((await setStatus(author, published.id, 'published')).status).to.equal(200);
    const edit = (id: string, user: TestUser) => ctx.server.request('patch', `/skill-listings/${id}`, { token: user.token, body: { title: 'Changed' } });
    expect((await edit(published.id, author)).status).to.equal(200);

    await ctx.db('organization_members').where({ organization_id: org, user_id: author.id }).update({ role: 'member' });
    const refused = await edit(published.id, author);
    expectError(refused, 403, 'forbidden', 'title');
    expect((await ctx.db('skill_listings').where({ id: published.id }).first()).title).to.equal('Changed');
    expect((await ctx.db('skill_listings').where({ id: published.id }).first()).version).to.equal(published.version);
    expect((await edit(draft.id, author)).status).to.equal(200);
    expect((await edit(published.id, newOperator())).status).to.equal(200);
  });
});
