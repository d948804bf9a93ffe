import { expect } from 'chai';
import { joinedMember, invite } from '../invitations/helpers.ts';
import { addMember, createOrganization, organizationPairs } from '../support/organizations.ts';
import { newUser, type TestUser } from '../support/server.ts';
import { useServer } from '../support/suite.ts';

const orgNotFound = { code: 'not_found', message: 'organization not found', data: { issues: [] } };
const memberNotFound = { code: 'not_found', message: 'member not found', data: { issues: [] } };
const lastOwner = (doing: string) => ({
  code: 'conflict',
  message: `${doing} would leave the organization without an owner; make another member an owner first`,
  data: { issues: [] },
});

describe('members: changes', () => {
  const ctx = useServer({}, { pool: 4 });

  const roleOf = async (org: string, userId: string) =>
    (await ctx.db('organization_members').where({ organization_id: org, user_id: userId }).first('role'))?.role;
  const activity = (org: string) =>
    ctx
      .db('activity_events')
      .where({ organization_id: org })
      .whereNot({ action: 'organization.created' })
      .orderBy('created_at')
      .select('action', 'actor_id', 'subject_type', 'subject_id', 'data');

  describe('PATCH /organizations/{id}/members/{user_id}', () => {
    it('changes the role, returns the member and records member.role_changed in the same change', async () => {
      const owner = newUser();
      const ada = newUser();
      const org = await createOrganization(ctx.server, owner);
      await addMember(ctx.db, org, ada, 'member');
      const res = await ctx.server.request('patch', `/organizations/${org}/members/${ada.id}`, { token: owner.token, body: { role: 'admin' } });
      expect(res.status).to.equal(200);
      const row = await ctx.db('organization_members').where({ organization_id: org, user_id: ada.id }).first();
      expect(row.role).to.equal('admin');
      expect(row.updated_at.getTime()).to.be.greaterThan(row.created_at.getTime());
      expect(res.body).to.deep.equal({
        member: {
          user_id: ada.id,
          email: ada.email,
          name: ada.name,
          role: 'admin',
          joined_at: row.created_at.toISOString(),
          updated_at: row.updated_at.toISOString(),
        },
      });
      expect(await activity(org)).to.deep.equal([
        { action: 'member.role_changed', actor_id: owner.id, subject_type: 'member', subject_id: ada.id, data: { from: 'member', to: 'admin' } },
      ]);
    });

    it('assigns a custom role; an unknown role is 400 naming the field and writes nothing', async () => {
      const owner = newUser();
      const ada = newUser();
      const org = await createOrganization(ctx.server, owner);
      await addMember(ctx.db, org, ada, 'member');
      await ctx.db('organization_roles').insert({ organization_id: org, key: 'editor', name: 'Editor', permissions: ['resources.create'] });
      const custom = await ctx.server.request('patch', `/organizations/${org}/members/${ada.id}`, { token: owner.token, body: { role: 'editor' } });
      expect(custom.status).to.equal(200);
      expect(custom.body.member.role).to.equal('editor');

      const unknown = await ctx.server.request('patch', `/organizations/${org}/members/${ada.id}`, { token: owner.token, body: { role: 'wizard' } });
      expect(unknown.status).to.equal(400);
      const message = 'role: the organization has no role "wizard"; use a built-in role or create it through PATCH /organizations/{organization_id}/roles';
      expect(unknown.body).to.deep.equal({ code: 'validation_failed', message, data: { issues: [{ path: ['role'], message }] } });
      const badShape = await ctx.server.request('patch', `/organizations/${org}/members/${ada.id}`, { token: owner.token, body: { role: 'admin', extra: 1 } });
      expect(badShape.status).to.equal(400);
      expect(badShape.body.message).to.match(/extra/);
      const missing = await ctx.server.request('patch', `/organizations/${org}/members/${ada.id}`, { token: owner.token, body: {} });
      expect(missing.status).to.equal(400);
      expect(missing.body.data.issues[0].path).to.deep.equal(['role']);
      expect(await roleOf(org, ada.id)).to.equal('editor');
      expect((await activity(org)).map((e) => e.action)).to.deep.equal(['member.role_changed']);
    });

    it('keeps the owner role to owners: admins can neither grant nor take it away (403)', async () => {
      const owner = newUser();
      const admin = newUser();
      const ada = newUser();
      const org = await createOrganization(ctx.server, owner);
      await addMember(ctx.db, org, admin, 'admin');
      await addMember(ctx.db, org, ada, 'member');
      const grant = await ctx.server.request('patch', `/organizations/${org}/members/${ada.id}`, { token: admin.token, body: { role: 'owner' } });
      expect(grant.status).to.equal(403);
      expect(grant.body).to.deep.equal({ code: 'forbidden', message: 'only owners may grant the owner role', data: { issues: [] } });
      const self = await ctx.server.request('patch', `/organizations/${org}/members/${admin.id}`, { token: admin.token, body: { role: 'owner' } });
      expect(self.status).to.equal(403);
      const demote = await ctx.server.request('patch', `/organizations/${org}/members/${owner.id}`, { token: admin.token, body: { role: 'member' } });
      expect(demote.status).to.equal(403);
      expect(demote.body.message).to.equal('only owners may take away the owner role');
      // Admins still manage everyone below them.
      const ok = await ctx.server.request('patch', `/organizations/${org}/members/${ada.id}`, { token: admin.token, body: { role: 'admin' } });
      expect(ok.status).to.equal(200);
      const promoted = await ctx.server.request('patch', `/organizations/${org}/members/${ada.id}`, { token: owner.token, body: { role: 'owner' } });
      expect(promoted.status).to.equal(200);
      expect(await roleOf(org, owner.id)).to.equal('owner');
      expect(await roleOf(org, ada.id)).to.equal('owner');
    });

    it('refuses to grant a role carrying permissions the caller lacks (403), and members without members.manage (403)', async () => {
      const owner = newUser();
      const admin = newUser();
      const ada = newUser();
      const org = await createOrganization(ctx.server, owner);
      await addMember(ctx.db, org, admin, 'admin');
      await addMember(ctx.db, org, ada, 'member');
      await ctx.db('organization_roles').insert({ organization_id: org, key: 'treasurer', name: 'Treasurer', permissions: ['billing.manage'] });
      const res = await ctx.server.request('patch', `/organizations/${org}/members/${ada.id}`, { token: admin.token, body: { role: 'treasurer' } });
      expect(res.status).to.equal(403);
      expect(res.body.message).to.equal('you cannot grant the role "treasurer": it carries billing.manage, which your role "admin" lacks');
      const plain = await ctx.server.request('patch', `/organizations/${org}/members/${admin.id}`, { token: ada.token, body: { role: 'member' } });
      expect(plain.status).to.equal(403);
      expect(plain.body.message).to.equal('your role "member" lacks the permission members.manage');
      expect(await roleOf(org, ada.id)).to.equal('member');
      expect(await roleOf(org, admin.id)).to.equal('admin');
    });

    it('never demotes the last owner (409); a second owner makes it possible', async () => {
      const owner = newUser();
      const other = newUser();
      const org = await createOrganization(ctx.server, owner);
      const res = await ctx.server.request('patch', `/organizations/${org}/members/${owner.id}`, { token: owner.token, body: { role: 'admin' } });
      expect(res.status).to.equal(409);
      expect(res.body).to.deep.equal(lastOwner('taking away this owner role'));
      expect(await roleOf(org, owner.id)).to.equal('owner');
      await addMember(ctx.db, org, other, 'owner');
      const now = await ctx.server.request('patch', `/organizations/${org}/members/${owner.id}`, { token: owner.token, body: { role: 'admin' } });
      expect(now.status).to.equal(200);
      expect(now.body.member.role).to.equal('admin');
    });

    it('answers 404 for an unknown member and for outsiders, and is a no-op when the role is unchanged', async () => {
      const owner = newUser();
      const outsider = newUser();
      const org = await createOrganization(ctx.server, owner);
      const unknown = await ctx.server.request('patch', `/organizations/${org}/members/${outsider.id}`, { token: owner.token, body: { role: 'admin' } });
      expect(unknown.status).to.equal(404);
      expect(unknown.body).to.deep.equal(memberNotFound);
      const outside = await ctx.server.request('patch', `/organizations/${org}/members/${owner.id}`, { token: outsider.token, body: { role: 'member' } });
      expect(outside.status).to.equal(404);
      expect(outside.body).to.deep.equal(orgNotFound);
      const same = await ctx.server.request('patch', `/organizations/${org}/members/${owner.id}`, { token: owner.token, body: { role: 'owner' } });
      expect(same.status).to.equal(200);
      expect(same.body.member.role).to.equal('owner');
      expect(await activity(org)).to.deep.equal([]);
    });

    it('keeps one owner when the two last owners demote themselves at the same time: exactly one succeeds', async () => {
      const rounds = await organizationPairs(ctx.server, ctx.db, 'owner');
      const results = await Promise.all(
        rounds.map(({ org, owner: a, other: b }) =>
          Promise.all([
            ctx.server.request('patch', `/organizations/${org}/members/${a.id}`, { token: a.token, body: { role: 'admin' } }),
            ctx.server.request('patch', `/organizations/${org}/members/${b.id}`, { token: b.token, body: { role: 'admin' } }),
          ]),
        ),
      );
      for (const [i, pair] of results.entries()) {
        expect(pair.map((r) => r.status).sort()).to.deep.equal([200, 409]);
        const loser = pair.find((r) => r.status === 409)!;
        expect(loser.body).to.deep.equal(lastOwner('taking away this owner role'));
        const owners = await ctx.db('organization_members').where({ organization_id: rounds[i]!.org, role: 'owner' }).pluck('user_id');
        expect(owners).to.have.length(1);
        expect((await activity(rounds[i]!.org)).map((e) => e.action)).to.deep.equal(['member.role_changed']);
      }
    });

    it('keeps one owner when one owner leaves while the other is being removed', async () => {
      const rounds = await organizationPairs(ctx.server, ctx.db, 'owner');
      const results = await Promise.all(
        rounds.map(({ org, owner: a, other: b }) =>
          Promise.all([
            ctx.server.request('post', `/organizations/${org}/leave`, { token: a.token }),
            ctx.server.request('delete', `/organizations/${org}/members/${b.id}`, { token: a.token }),
          ]),
        ),
      );
      for (const [i, pair] of results.entries()) {
        const owners = await ctx.db('organization_members').where({ organization_id: rounds[i]!.org, role: 'owner' }).pluck('user_id');
        expect(owners).to.have.length(1);
        expect(pair.filter((r) => r.status === 204)).to.have.length(1);
      }
    });
  });

  describe('DELETE /organizations/{id}/members/{user_id}', () => {
    it('removes the member and their personalization, recording member.removed', async () => {
      const owner = newUser();
      const ada = newUser();
      const org = await createOrganization(ctx.server, owner);
      await addMember(ctx.db, org, ada, 'admin');
      const saved = await ctx.server.request('patch', `/organizations/${org}/members/${ada.id}/personalization`, {
        token: ada.token,
        body: { job_title: 'Editor' },
      });
      expect(saved.status).to.equal(200);
      const res = await ctx.server.request('delete', `/organizations/${org}/members/${ada.id}`, { token: owner.token });
      expect(res.status).to.equal(204);
      expect(res.body).to.equal(undefined);
      expect(await roleOf(org, ada.id)).to.equal(undefined);
      expect(await ctx.db('organization_member_personalizations').where({ organization_id: org, user_id: ada.id })).to.deep.equal([]);
      expect((await activity(org)).at(-1)).to.deep.equal({
        action: 'member.removed',
        actor_id: owner.id,
        subject_type: 'member',
        subject_id: ada.id,
        data: { role: 'admin', grants_removed: 0 },
      });
      expect((await ctx.server.request('get', `/organizations/${org}`, { token: ada.token })).status).to.equal(404);
    });

    it('lets admins remove members but not owners (403); members cannot remove anyone (403)', async () => {
      const owner = newUser();
      const admin = newUser();
      const ada = newUser();
      const org = await createOrganization(ctx.server, owner);
      await addMember(ctx.db, org, admin, 'admin');
      await addMember(ctx.db, org, ada, 'member');
      const byMember = await ctx.server.request('delete', `/organizations/${org}/members/${admin.id}`, { token: ada.token });
      expect(byMember.status).to.equal(403);
      expect(byMember.body.message).to.equal('your role "member" lacks the permission members.manage');
      const ownerRemoval = await ctx.server.request('delete', `/organizations/${org}/members/${owner.id}`, { token: admin.token });
      expect(ownerRemoval.status).to.equal(403);
      expect(ownerRemoval.body).to.deep.equal({ code: 'forbidden', message: 'only owners may remove a member holding the owner role', data: { issues: [] } });
      expect(await roleOf(org, owner.id)).to.equal('owner');
      const ok = await ctx.server.request('delete', `/organizations/${org}/members/${ada.id}`, { token: admin.token });
      expect(ok.status).to.equal(204);
      expect((await activity(org)).map((e) => e.action)).to.deep.equal(['member.removed']);
    });

    it('never removes the last owner (409), and answers 404 for unknown members and outsiders', async () => {
      const owner = newUser();
      const outsider = newUser();
      const org = await createOrganization(ctx.server, owner);
      const self = await ctx.server.request('delete', `/organizations/${org}/members/${owner.id}`, { token: owner.token });
      expect(self.status).to.equal(409);
      expect(self.body).to.deep.equal(lastOwner('removing this member'));
      const unknown = await ctx.server.request('delete', `/organizations/${org}/members/${outsider.id}`, { token: owner.token });
      expect(unknown.status).to.equal(404);
      expect(unknown.body).to.deep.equal(memberNotFound);
      const outside = await ctx.server.request('delete', `/organizations/${org}/members/${owner.id}`, { token: outsider.token });
      expect(outside.status).to.equal(404);
      expect(outside.body).to.deep.equal(orgNotFound);
      expect(await roleOf(org, owner.id)).to.equal('owner');
      expect(await activity(org)).to.deep.equal([]);
    });
  });

  describe('POST /organizations/{id}/leave', () => {
    it('lets a member leave (204) and records member.left', async () => {
      const owner = newUser();
      const ada = newUser();
      const org = await createOrganization(ctx.server, owner);
      await addMember(ctx.db, org, ada, 'member');
      const res = await ctx.server.request('post', `/organizations/${org}/leave`, { token: ada.token });
      expect(res.status).to.equal(204);
      expect(await roleOf(org, ada.id)).to.equal(undefined);
      expect(await activity(org)).to.deep.equal([
        { action: 'member.left', actor_id: ada.id, subject_type: 'member', subject_id: ada.id, data: { role: 'member', grants_removed: 0 } },
      ]);
      const again = await ctx.server.request('post', `/organizations/${org}/leave`, { token: ada.token });
      expect(again.status).to.equal(404);
      expect(again.body).to.deep.equal(orgNotFound);
    });

    it('refuses the last owner (409) but lets an owner go when another owner stays; rejects a body (400)', async () => {
      const owner = newUser();
      const other = newUser();
      const org = await createOrganization(ctx.server, owner);
      const last = await ctx.server.request('post', `/organizations/${org}/leave`, { token: owner.token });
      expect(last.status).to.equal(409);
      expect(last.body).to.deep.equal(lastOwner('leaving'));
      const withBody = await ctx.server.request('post', `/organizations/${org}/leave`, { token: owner.token, body: { why: 'x' } });
      expect(withBody.status).to.equal(400);
      expect(await roleOf(org, owner.id)).to.equal('owner');
      await addMember(ctx.db, org, other, 'owner');
      expect((await ctx.server.request('post', `/organizations/${org}/leave`, { token: owner.token })).status).to.equal(204);
      expect(await ctx.db('organization_members').where({ organization_id: org }).pluck('user_id')).to.deep.equal([other.id]);
    });
  });

  describe('resource grants of a departing member', () => {
    const grantOn = async (by: TestUser, type: string, id: string, user: TestUser, role: 'viewer' | 'editor') => {
      const res = await ctx.server.request('post', `/access/${type}/${id}/grants`, { token: by.token, body: { user_id: user.id, role } });
      expect(res.status, JSON.stringify(res.body)).to.equal(201);
    };
    const create = async (by: TestUser, path: string, org: string) => {
      const res = await ctx.server.request('post', path, { token: by.token, body: { organization_id: org, title: 'Private' } });
      expect(res.status).to.equal(201);
      return res.body.id as string;
    };
    const grantsOf = (org: string, userId: string) =>
      ctx.db('resource_grants').where({ organization_id: org, user_id: userId }).orderBy('resource_type').select('resource_type', 'resource_id', 'role');
    const rejoin = async (org: string, owner: TestUser, user: TestUser) => {
      const invited = await invite(ctx.server, org, owner, user.email);
      expect(invited.status).to.equal(201);
      const accepted = await ctx.server.request('patch', `/organizations/${org}/invitations/${invited.body.invitation.id}`, {
        token: user.token,
        body: { status: 'accepted' },
      });
      expect(accepted.status).to.equal(200);
    };

    it('removal deletes the member’s grants in that organization only, in the same change; re-invited, they regain nothing', async () => {
      const owner = newUser();
      const bob = newUser();
      const org = await createOrganization(ctx.server, owner);
      const ada = await joinedMember(ctx.server, org, owner);
      await addMember(ctx.db, org, bob);
      const project = await create(owner, '/projects', org);
      const canvas = await create(owner, '/canvases', org);
      await grantOn(owner, 'project', project, ada, 'editor');
      await grantOn(owner, 'canvas', canvas, ada, 'viewer');
      await grantOn(owner, 'canvas', canvas, bob, 'editor');
      // Ada's grant in another organization is that organization's business.
      const elsewhere = await createOrganization(ctx.server, owner);
      await addMember(ctx.db, elsewhere, ada);
      const otherCanvas = await create(owner, '/canvases', elsewhere);
      await grantOn(owner, 'canvas', otherCanvas, ada, 'viewer');
      expect((await ctx.server.request('get', `/projects/${project}`, { token: ada.token })).status).to.equal(200);

      const res = await ctx.server.request('delete', `/organizations/${org}/members/${ada.id}`, { token: owner.token });
      expect(res.status).to.equal(204);
      expect(await grantsOf(org, ada.id)).to.deep.equal([]);
      expect(await grantsOf(org, bob.id)).to.deep.equal([{ resource_type: 'canvas', resource_id: canvas, role: 'editor' }]);
      expect(await grantsOf(elsewhere, ada.id)).to.deep.equal([{ resource_type: 'canvas', resource_id: otherCanvas, role: 'viewer' }]);
      expect((await activity(org)).at(-1)).to.deep.equal({
        action: 'member.removed',
        actor_id: owner.id,
        subject_type: 'member',
        subject_id: ada.id,
        data: { role: 'member', grants_removed: 2 },
      });

      await rejoin(org, owner, ada);
      expect(await grantsOf(org, ada.id)).to.deep.equal([]);
      expect((await ctx.server.request('get', `/projects/${project}`, { token: ada.token })).status).to.equal(404);
      expect((await ctx.server.request('get', `/canvases/${canvas}`, { token: ada.token })).status).to.equal(404);
      const record = await ctx.server.request('get', `/access/canvas/${canvas}`, { token: owner.token });
      expect(record.status).to.equal(200);
      expect(JSON.stringify(record.body)).not.to.include(ada.id);
    });

    it('leaving deletes the leaver’s grants and records grants_removed; re-invited, they regain nothing', async () => {
      const owner = newUser();
      const org = await createOrganization(ctx.server, owner);
      const ada = await joinedMember(ctx.server, org, owner);
      const project = await create(owner, '/projects', org);
      await grantOn(owner, 'project', project, ada, 'viewer');
      const res = await ctx.server.request('post', `/organizations/${org}/leave`, { token: ada.token });
      expect(res.status).to.equal(204);
      expect(await grantsOf(org, ada.id)).to.deep.equal([]);
      expect((await activity(org)).at(-1)).to.deep.equal({
        action: 'member.left',
        actor_id: ada.id,
        subject_type: 'member',
        subject_id: ada.id,
        data: { role: 'member', grants_removed: 1 },
      });
      await rejoin(org, owner, ada);
      expect((await ctx.server.request('get', `/projects/${project}`, { token: ada.token })).status).to.equal(404);
    });

    it('a refused removal (403) leaves the member’s grants in place', async () => {
      const owner = newUser();
      const admin = newUser();
      const coOwner = newUser();
      const org = await createOrganization(ctx.server, owner);
      await addMember(ctx.db, org, admin, 'admin');
      await addMember(ctx.db, org, coOwner, 'owner');
      const canvas = await create(admin, '/canvases', org);
      await grantOn(admin, 'canvas', canvas, coOwner, 'editor');
      const res = await ctx.server.request('delete', `/organizations/${org}/members/${coOwner.id}`, { token: admin.token });
      expect(res.status).to.equal(403);
      expect(await grantsOf(org, coOwner.id)).to.deep.equal([{ resource_type: 'canvas', resource_id: canvas, role: 'editor' }]);
      expect((await activity(org)).map((e) => e.action)).to.deep.equal(['canvas.created', 'access.grant_created']);
    });
  });
});
