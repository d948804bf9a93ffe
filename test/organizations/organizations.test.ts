import { expect } from 'chai';
import { newUser } from '../support/server.ts';
import { useServer } from '../support/suite.ts';

describe('organizations', () => {
  const ctx = useServer();

  describe('POST /organizations', () => {
    it('creates the organization, makes the caller its owner and records the activity', async () => {
      const alice = newUser();
      const res = await ctx.server.request('post', '/organizations', { token: alice.token, body: { name: 'Acme Studio' } });
      expect(res.status).to.equal(201);
      const org = res.body.organization;
      expect(org).to.include({ name: 'Acme Studio', role: 'owner', created_by_id: alice.id, logo_url: null, onboarded_at: null });
      expect(org.slug).to.match(/^acme-studio(-\d+)?$/);
      expect(Object.keys(org).sort()).to.deep.equal(['created_at', 'created_by_id', 'id', 'logo_url', 'name', 'onboarded_at', 'role', 'slug', 'updated_at']);
      const members = await ctx.db('organization_members').where({ organization_id: org.id });
      expect(members.map((m) => [m.user_id, m.role])).to.deep.equal([[alice.id, 'owner']]);
      const activity = await ctx.db('activity_events').where({ organization_id: org.id }).pluck('action');
      expect(activity).to.deep.equal(['organization.created']);
      const user = await ctx.db('users').where({ id: alice.id }).first();
      expect(user).to.include({ email: alice.email, name: alice.name });
    });

    it('rejects a taken slug with 409 and writes nothing', async () => {
      const alice = newUser();
      const slug = `taken-${Date.now()}`;
      expect((await ctx.server.request('post', '/organizations', { token: alice.token, body: { name: 'One', slug } })).status).to.equal(201);
      const before = await ctx.db('organizations').count<{ count: number }[]>('* as count');
      const res = await ctx.server.request('post', '/organizations', { token: alice.token, body: { name: 'Two', slug } });
      expect(res.status).to.equal(409);
      expect(res.body).to.deep.equal({
        code: 'conflict',
        message: `slug: "${slug}" is taken`,
        data: { issues: [{ path: ['slug'], message: `slug: "${slug}" is taken` }] },
      });
      const after = await ctx.db('organizations').count<{ count: number }[]>('* as count');
      expect(after[0]!.count).to.equal(before[0]!.count);
    });

    it('names the field and rule for invalid bodies, and rejects unknown fields', async () => {
      const alice = newUser();
      const missing = await ctx.server.request('post', '/organizations', { token: alice.token, body: {} });
      expect(missing.status).to.equal(400);
      expect(missing.body.code).to.equal('validation_failed');
      expect(missing.body.data.issues[0].path).to.deep.equal(['name']);
      expect(missing.body.message).to.match(/^name: /);
      const unknown = await ctx.server.request('post', '/organizations', { token: alice.token, body: { name: 'X', colour: 'red' } });
      expect(unknown.status).to.equal(400);
      expect(unknown.body.message).to.match(/colour/);
      const badSlug = await ctx.server.request('post', '/organizations', { token: alice.token, body: { name: 'X', slug: 'Not A Slug' } });
      expect(badSlug.status).to.equal(400);
      expect(badSlug.body.data.issues[0].path).to.deep.equal(['slug']);
    });
  });

  describe('GET/PATCH/DELETE /organizations/{id}', () => {
    it('returns the organization to members and 404 to everyone else', async () => {
      const alice = newUser();
      const mallory = newUser();
      const created = await ctx.server.request('post', '/organizations', { token: alice.token, body: { name: 'Private Co' } });
      const id = created.body.organization.id;
      const mine = await ctx.server.request('get', `/organizations/${id}`, { token: alice.token });
      expect(mine.status).to.equal(200);
      expect(mine.body).to.deep.equal(created.body);
      const theirs = await ctx.server.request('get', `/organizations/${id}`, { token: mallory.token });
      const missing = await ctx.server.request('get', `/organizations/does-not-exist`, { token: mallory.token });
      expect(theirs.status).to.equal(404);
      expect(theirs.body).to.deep.equal(missing.body);
    });

    it('renames, then soft-deletes (owner only), after which it is 404', async () => {
      const alice = newUser();
      const created = await ctx.server.request('post', '/organizations', { token: alice.token, body: { name: 'Old name' } });
      const id = created.body.organization.id;
      const renamed = await ctx.server.request('patch', `/organizations/${id}`, { token: alice.token, body: { name: 'New name' } });
      expect(renamed.status).to.equal(200);
      expect(renamed.body.organization.name).to.equal('New name');
      const empty = await ctx.server.request('patch', `/organizations/${id}`, { token: alice.token, body: {} });
      expect(empty.status).to.equal(400);
      const deleted = await ctx.server.request('delete', `/organizations/${id}`, { token: alice.token });
      expect(deleted.status).to.equal(204);
      expect((await ctx.server.request('get', `/organizations/${id}`, { token: alice.token })).status).to.equal(404);
      const row = await ctx.db('organizations').where({ id }).first();
      expect(row.deleted_by_id).to.equal(alice.id);
      expect(row.deleted_at).to.be.instanceOf(Date);
    });
  });

  describe('GET /organizations/available-slug', () => {
    it('normalises the wanted slug and suggests a free one when taken', async () => {
      const alice = newUser();
      const slug = `brand-${Date.now()}`;
      const free = await ctx.server.request('get', '/organizations/available-slug', { token: alice.token, query: { slug: `  ${slug.toUpperCase()} ` } });
      expect(free.status).to.equal(200);
      expect(free.body).to.deep.equal({ slug, available: true, suggestion: slug });
      await ctx.server.request('post', '/organizations', { token: alice.token, body: { name: 'Brand', slug } });
      const taken = await ctx.server.request('get', '/organizations/available-slug', { token: alice.token, query: { slug } });
      expect(taken.body).to.deep.equal({ slug, available: false, suggestion: `${slug}-2` });
    });
  });
});
