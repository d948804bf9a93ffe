import { expect } from 'chai';
import { addMember, createOrganization } from '../support/organizations.ts';
import { newUser, type TestUser } from '../support/server.ts';
import { useServer } from '../support/suite.ts';

const orgNotFound = { code: 'not_found', message: 'organization not found', data: { issues: [] } };

describe('members: reading', () => {
  const ctx = useServer();

  async function memberJson(orgId: string, user: TestUser) {
    const row = await ctx.db('organization_members').where({ organization_id: orgId, user_id: user.id }).first();
    return {
      user_id: user.id,
      email: user.email,
      name: user.name,
      role: row.role,
      joined_at: row.created_at.toISOString(),
      updated_at: row.updated_at.toISOString(),
    };
  }

  describe('GET /organizations/{id}/members', () => {
    it('lists every member in join order with the full member shape, paged by cursor', async () => {
      const owner = newUser();
      const org = await createOrganization(ctx.server, owner);
      const others = [newUser(), newUser(), newUser(), newUser()];
      for (const [i, user] of others.entries()) await addMember(ctx.db, org, user, i === 0 ? 'admin' : 'member');
      const expected = [await memberJson(org, owner), ...(await Promise.all(others.map((u) => memberJson(org, u))))];

      const all = await ctx.server.request('get', `/organizations/${org}/members`, { token: owner.token });
      expect(all.status).to.equal(200);
      expect(all.body).to.deep.equal({ items: expected, next_cursor: null });

      const seen = [];
      let cursor: string | undefined;
      do {
        const page = await ctx.server.request('get', `/organizations/${org}/members`, { token: owner.token, query: { limit: 2, cursor } });
        expect(page.status).to.equal(200);
        expect(page.body.items.length).to.be.at.most(2);
        seen.push(...page.body.items);
        cursor = page.body.next_cursor ?? undefined;
      } while (cursor);
      expect(seen).to.deep.equal(expected);
    });

    it('filters by role and by a case-insensitive part of the name or e-mail', async () => {
      const owner = newUser();
      const org = await createOrganization(ctx.server, owner);
      const ada = newUser({ name: 'Ada Lovelace_%' });
      const bob = newUser({ email: `bob.BUILDER-${Date.now()}@example.test` });
      await addMember(ctx.db, org, ada, 'admin');
      await addMember(ctx.db, org, bob, 'member');

      const admins = await ctx.server.request('get', `/organizations/${org}/members`, { token: owner.token, query: { role: 'admin' } });
      expect(admins.body).to.deep.equal({ items: [await memberJson(org, ada)], next_cursor: null });
      const byName = await ctx.server.request('get', `/organizations/${org}/members`, { token: owner.token, query: { search: 'lovelace' } });
      expect(byName.body.items.map((m: { user_id: string }) => m.user_id)).to.deep.equal([ada.id]);
      const byEmail = await ctx.server.request('get', `/organizations/${org}/members`, { token: owner.token, query: { search: 'bob.builder' } });
      expect(byEmail.body.items.map((m: { user_id: string }) => m.user_id)).to.deep.equal([bob.id]);
      // LIKE wildcards in the search are taken literally.
      const literal = await ctx.server.request('get', `/organizations/${org}/members`, { token: owner.token, query: { search: '_%' } });
      expect(literal.body.items.map((m: { user_id: string }) => m.user_id)).to.deep.equal([ada.id]);
      const none = await ctx.server.request('get', `/organizations/${org}/members`, { token: owner.token, query: { role: 'member', search: 'lovelace' } });
      expect(none.body).to.deep.equal({ items: [], next_cursor: null });
    });

    it('answers 404 to non-members (same body as a missing organization), 403 without members.view, 400 on bad queries', async () => {
      const owner = newUser();
      const outsider = newUser();
      const viewerless = newUser();
      const org = await createOrganization(ctx.server, owner);
      await ctx.db('organization_roles').insert({ organization_id: org, key: 'guest', name: 'Guest', permissions: [] });
      await addMember(ctx.db, org, viewerless, 'guest');

      const theirs = await ctx.server.request('get', `/organizations/${org}/members`, { token: outsider.token });
      const missing = await ctx.server.request('get', `/organizations/nope-${Date.now()}/members`, { token: outsider.token });
      expect(theirs.status).to.equal(404);
      expect(theirs.body).to.deep.equal(orgNotFound);
      expect(missing.body).to.deep.equal(orgNotFound);

      const forbidden = await ctx.server.request('get', `/organizations/${org}/members`, { token: viewerless.token });
      expect(forbidden.status).to.equal(403);
      expect(forbidden.body).to.deep.equal({ code: 'forbidden', message: 'your role "guest" lacks the permission members.view', data: { issues: [] } });

      const badLimit = await ctx.server.request('get', `/organizations/${org}/members`, { token: owner.token, query: { limit: 0 } });
      expect(badLimit.status).to.equal(400);
      expect(badLimit.body.data.issues[0].path).to.deep.equal(['limit']);
      const badCursor = await ctx.server.request('get', `/organizations/${org}/members`, { token: owner.token, query: { cursor: 'garbage' } });
      expect(badCursor.status).to.equal(400);
      expect(badCursor.body.data.issues[0].path).to.deep.equal(['cursor']);
      const badRole = await ctx.server.request('get', `/organizations/${org}/members`, { token: owner.token, query: { role: 'Not A Role' } });
      expect(badRole.status).to.equal(400);
      expect(badRole.body.data.issues[0].path).to.deep.equal(['role']);
    });
  });

  describe('GET /organizations/{id}/members/{user_id}', () => {
    it('returns one member wrapped in {member}', async () => {
      const owner = newUser();
      const org = await createOrganization(ctx.server, owner);
      const ada = newUser();
      await addMember(ctx.db, org, ada, 'admin');
      const res = await ctx.server.request('get', `/organizations/${org}/members/${ada.id}`, { token: owner.token });
      expect(res.status).to.equal(200);
      expect(res.body).to.deep.equal({ member: await memberJson(org, ada) });
    });

    it('lets a member read themself without members.view, but nobody else (403); unknown members and outsiders get 404', async () => {
      const owner = newUser();
      const guest = newUser();
      const outsider = newUser();
      const org = await createOrganization(ctx.server, owner);
      await ctx.db('organization_roles').insert({ organization_id: org, key: 'guest', name: 'Guest', permissions: [] });
      await addMember(ctx.db, org, guest, 'guest');

      const self = await ctx.server.request('get', `/organizations/${org}/members/${guest.id}`, { token: guest.token });
      expect(self.status).to.equal(200);
      expect(self.body).to.deep.equal({ member: await memberJson(org, guest) });
      const other = await ctx.server.request('get', `/organizations/${org}/members/${owner.id}`, { token: guest.token });
      expect(other.status).to.equal(403);
      expect(other.body.code).to.equal('forbidden');

      const unknown = await ctx.server.request('get', `/organizations/${org}/members/${outsider.id}`, { token: owner.token });
      expect(unknown.status).to.equal(404);
      expect(unknown.body).to.deep.equal({ code: 'not_found', message: 'member not found', data: { issues: [] } });
      const outside = await ctx.server.request('get', `/organizations/${org}/members/${owner.id}`, { token: outsider.token });
      expect(outside.status).to.equal(404);
      expect(outside.body).to.deep.equal(orgNotFound);
    });
  });
});
