import { expect } from 'chai';
import { invitationEmailJob } from '../../src/invitations/jobs.ts';
import { newUser } from '../support/server.ts';
import { useServer } from '../support/suite.ts';
import { createOrganization, invite, joinedMember } from './helpers.ts';

const fields = ['accepted_at', 'created_at', 'email', 'expires_at', 'id', 'invited_by_id', 'organization_id', 'role', 'status', 'updated_at'];
const DAY = 24 * 3600 * 1000;

describe('invitations', () => {
  const ctx = useServer();
  const path = (org: string, id?: string) => `/organizations/${org}/invitations${id ? `/${id}` : ''}`;
  const jobsFor = (invitationId: string) =>
    ctx.db('pgboss.job').where({ name: invitationEmailJob.name }).whereRaw(`data->>'invitation_id' = ?`, [invitationId]);
  const emailJobCount = async () => Number((await ctx.db('pgboss.job').where({ name: invitationEmailJob.name }).count('* as n'))[0]!.n);

  describe('POST /organizations/{id}/invitations', () => {
    it('creates a pending invitation valid for 7 days, records the activity and enqueues exactly one e-mail job', async () => {
      const owner = newUser();
      const org = await createOrganization(ctx.server, owner);
      const res = await invite(ctx.server, org, owner, '  New.Person@Example.TEST ', 'admin');
      expect(res.status).to.equal(201);
      const invitation = res.body.invitation;
      expect(Object.keys(invitation).sort()).to.deep.equal(fields);
      expect(invitation).to.include({
        organization_id: org,
        email: 'new.person@example.test',
        role: 'admin',
        status: 'pending',
        invited_by_id: owner.id,
        accepted_at: null,
      });
      expect(new Date(invitation.expires_at).getTime() - new Date(invitation.created_at).getTime()).to.equal(7 * DAY);
      const activity = await ctx.db('activity_events').where({ organization_id: org, subject_id: invitation.id });
      expect(activity.map((a) => [a.action, a.actor_id, a.data])).to.deep.equal([
        ['invitation.created', owner.id, { email: 'new.person@example.test', role: 'admin' }],
      ]);
      const jobs = await jobsFor(invitation.id);
      expect(jobs).to.have.length(1);
      // The job records the request that enqueued it (the console's lookup by request id).
      expect(jobs[0]!.data).to.deep.equal({ invitation_id: invitation.id, $request_id: res.headers.get('x-request-id') });
    });

    it('answers 409 for a second pending invitation to the same address (any case) and enqueues nothing', async () => {
      const owner = newUser();
      const org = await createOrganization(ctx.server, owner);
      expect((await invite(ctx.server, org, owner, 'dup@example.test')).status).to.equal(201);
      const jobsBefore = await emailJobCount();
      const res = await invite(ctx.server, org, owner, 'DUP@example.test', 'admin');
      expect(res.status).to.equal(409);
      expect(res.body).to.deep.equal({
        code: 'conflict',
        message: 'email: dup@example.test already has a pending invitation',
        data: { issues: [{ path: ['email'], message: 'email: dup@example.test already has a pending invitation' }] },
      });
      expect(await emailJobCount()).to.equal(jobsBefore);
      expect(await ctx.db('invitations').where({ organization_id: org })).to.have.length(1);
    });

    it('answers 409 when the address belongs to a member', async () => {
      const owner = newUser();
      const org = await createOrganization(ctx.server, owner);
      const member = await joinedMember(ctx.server, org, owner);
      const res = await invite(ctx.server, org, owner, member.email.toUpperCase());
      expect(res.status).to.equal(409);
      expect(res.body.message).to.equal(`email: ${member.email} is already a member of the organization`);
    });

    it('names the field and rule for bad input: e-mail, unknown role, unknown field', async () => {
      const owner = newUser();
      const org = await createOrganization(ctx.server, owner);
      const badEmail = await invite(ctx.server, org, owner, 'not-an-email');
      expect(badEmail.status).to.equal(400);
      expect(badEmail.body.data.issues[0].path).to.deep.equal(['email']);
      expect(badEmail.body.message).to.equal('email: must be an e-mail address');
      const badRole = await invite(ctx.server, org, owner, 'x@example.test', 'overlord');
      expect(badRole.status).to.equal(400);
      expect(badRole.body).to.deep.equal({
        code: 'validation_failed',
        message: 'role: no role "overlord" in this organization',
        data: { issues: [{ path: ['role'], message: 'role: no role "overlord" in this organization' }] },
      });
      const extra = await ctx.server.request('post', path(org), { token: owner.token, body: { email: 'x@example.test', role: 'member', note: 'hi' } });
      expect(extra.status).to.equal(400);
      expect(extra.body.message).to.match(/note/);
      const missing = await ctx.server.request('post', path(org), { token: owner.token, body: { email: 'x@example.test' } });
      expect(missing.status).to.equal(400);
      expect(missing.body.data.issues[0].path).to.deep.equal(['role']);
      expect(await ctx.db('invitations').where({ organization_id: org })).to.have.length(0);
    });

    it('lets only owners invite owners (403 for admins), 403 for plain members and 404 for outsiders', async () => {
      const owner = newUser();
      const org = await createOrganization(ctx.server, owner);
      const admin = await joinedMember(ctx.server, org, owner, 'admin');
      const member = await joinedMember(ctx.server, org, owner, 'member');
      const adminOwner = await invite(ctx.server, org, admin, 'boss@example.test', 'owner');
      expect(adminOwner.status).to.equal(403);
      expect(adminOwner.body).to.deep.equal({ code: 'forbidden', message: 'only owners may invite owners', data: { issues: [] } });
      expect((await invite(ctx.server, org, admin, 'staff@example.test', 'member')).status).to.equal(201);
      expect((await invite(ctx.server, org, owner, 'boss@example.test', 'owner')).status).to.equal(201);
      const byMember = await invite(ctx.server, org, member, 'other@example.test');
      expect(byMember.status).to.equal(403);
      expect(byMember.body.message).to.equal('your role "member" lacks the permission invitations.manage');
      const outsider = newUser();
      const hidden = await invite(ctx.server, org, outsider, 'other@example.test');
      const missing = await invite(ctx.server, 'no-such-org', outsider, 'other@example.test');
      expect(hidden.status).to.equal(404);
      expect(hidden.body).to.deep.equal(missing.body);
    });
    it('accepts a custom role of the organization, and the invitee joins with it', async () => {
      const owner = newUser();
      const org = await createOrganization(ctx.server, owner);
      await ctx.db('organization_roles').insert({ organization_id: org, key: 'reviewer', name: 'Reviewer', permissions: ['members.view'] });
      const invitee = newUser();
      const res = await invite(ctx.server, org, owner, invitee.email, 'reviewer');
      expect(res.status).to.equal(201);
      expect(res.body.invitation.role).to.equal('reviewer');
      const accepted = await ctx.server.request('patch', path(org, res.body.invitation.id), { token: invitee.token, body: { status: 'accepted' } });
      expect(accepted.status).to.equal(200);
      expect(await ctx.db('organization_members').where({ organization_id: org, user_id: invitee.id }).first('role')).to.deep.equal({ role: 'reviewer' });
    });
  });

  describe('GET /organizations/{id}/invitations', () => {
    it('pages newest first with every invitation once, filters by status, and is for managers only', async () => {
      const owner = newUser();
      const org = await createOrganization(ctx.server, owner);
      const ids: string[] = [];
      for (let i = 0; i < 5; i++) ids.push((await invite(ctx.server, org, owner, `p${i}@example.test`)).body.invitation.id);
      const seen: string[] = [];
      let cursor: string | undefined;
      do {
        const page = await ctx.server.request('get', path(org), { token: owner.token, query: { limit: 2, cursor } });
        expect(page.status).to.equal(200);
        expect(page.body.items.length).to.be.at.most(2);
        seen.push(...page.body.items.map((i: { id: string }) => i.id));
        cursor = page.body.next_cursor ?? undefined;
      } while (cursor);
      expect(seen).to.deep.equal([...ids].reverse());

      await ctx.server.request('delete', path(org, ids[0]), { token: owner.token });
      await ctx
        .db('invitations')
        .where({ id: ids[1] })
        .update({ expires_at: ctx.db.raw(`now() - interval '1 minute'`) });
      const revoked = await ctx.server.request('get', path(org), { token: owner.token, query: { status: 'revoked' } });
      expect(revoked.body.items.map((i: { id: string; status: string }) => [i.id, i.status])).to.deep.equal([[ids[0], 'revoked']]);
      const expired = await ctx.server.request('get', path(org), { token: owner.token, query: { status: 'expired' } });
      expect(expired.body.items.map((i: { id: string; status: string }) => [i.id, i.status])).to.deep.equal([[ids[1], 'expired']]);
      const pending = await ctx.server.request('get', path(org), { token: owner.token, query: { status: 'pending' } });
      expect(pending.body.items.map((i: { id: string }) => i.id)).to.deep.equal([ids[4], ids[3], ids[2]]);
      expect((await ctx.server.request('get', path(org), { token: owner.token, query: { status: 'lost' } })).status).to.equal(400);

      const member = await joinedMember(ctx.server, org, owner);
      expect((await ctx.server.request('get', path(org), { token: member.token })).status).to.equal(403);
      expect((await ctx.server.request('get', path(org), { token: newUser().token })).status).to.equal(404);
    });
  });

  describe('GET /organizations/{id}/invitations/{invitation_id}', () => {
    it('shows the invitation to managers and to the invitee only', async () => {
      const owner = newUser();
      const org = await createOrganization(ctx.server, owner);
      const invitee = newUser();
      const created = (await invite(ctx.server, org, owner, invitee.email)).body.invitation;
      const byOwner = await ctx.server.request('get', path(org, created.id), { token: owner.token });
      expect(byOwner.status).to.equal(200);
      expect(byOwner.body).to.deep.equal({ invitation: created });
      const byInvitee = await ctx.server.request('get', path(org, created.id), {
        token: newUser({ id: invitee.id, email: invitee.email.toUpperCase() }).token,
      });
      expect(byInvitee.status).to.equal(200);
      expect(byInvitee.body).to.deep.equal({ invitation: created });
      const member = await joinedMember(ctx.server, org, owner);
      expect((await ctx.server.request('get', path(org, created.id), { token: member.token })).status).to.equal(403);
      const outsider = await ctx.server.request('get', path(org, created.id), { token: newUser().token });
      const nothing = await ctx.server.request('get', path(org, '00000000-0000-4000-8000-000000000000'), { token: newUser().token });
      expect(outsider.status).to.equal(404);
      expect(outsider.body).to.deep.equal(nothing.body);
      expect((await ctx.server.request('get', path(org, 'not-a-uuid'), { token: owner.token })).status).to.equal(400);
    });
  });
});
