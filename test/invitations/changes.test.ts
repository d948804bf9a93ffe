import { expect } from 'chai';
import { newUser } from '../support/server.ts';
import { useServer } from '../support/suite.ts';
import { createOrganization, invite, joinedMember } from './helpers.ts';

describe('invitation changes', () => {
  const ctx = useServer();
  const path = (org: string, id: string, suffix = '') => `/organizations/${org}/invitations/${id}${suffix}`;
  const actions = async (org: string) =>
    (await ctx.db('activity_events').where({ organization_id: org }).orderBy('created_at').orderBy('action')).map((a) => a.action);

  describe('accepting (PATCH {"status":"accepted"})', () => {
    it('makes the invitee a member with the invited role in the same change, once', async () => {
      const owner = newUser();
      const org = await createOrganization(ctx.server, owner);
      const invitee = newUser();
      const id = (await invite(ctx.server, org, owner, invitee.email, 'admin')).body.invitation.id;
      // The token's e-mail claim matches case-insensitively.
      const shouting = newUser({ id: invitee.id, email: invitee.email.toUpperCase() });
      const res = await ctx.server.request('patch', path(org, id), { token: shouting.token, body: { status: 'accepted' } });
      expect(res.status).to.equal(200);
      expect(res.body.invitation).to.include({ id, status: 'accepted', role: 'admin', email: invitee.email });
      expect(res.body.invitation.accepted_at).to.be.a('string');
      const member = await ctx.db('organization_members').where({ organization_id: org, user_id: invitee.id }).first();
      expect(member.role).to.equal('admin');
      expect(await ctx.db('invitations').where({ id }).first('accepted_by_id')).to.deep.equal({ accepted_by_id: invitee.id });
      expect(await actions(org)).to.have.members(['organization.created', 'invitation.created', 'invitation.accepted', 'member.joined']);
      const org2 = await ctx.server.request('get', `/organizations/${org}`, { token: invitee.token });
      expect(org2.body.organization.role).to.equal('admin');
      const again = await ctx.server.request('patch', path(org, id), { token: invitee.token, body: { status: 'accepted' } });
      expect(again.status).to.equal(409);
      expect(again.body.message).to.equal('status: the invitation is accepted, not pending');
    });

    it('is for the invitee only: 403 for a manager, 404 for an outsider, 400 for other statuses', async () => {
      const owner = newUser();
      const org = await createOrganization(ctx.server, owner);
      const invitee = newUser();
      const id = (await invite(ctx.server, org, owner, invitee.email)).body.invitation.id;
      const byOwner = await ctx.server.request('patch', path(org, id), { token: owner.token, body: { status: 'accepted' } });
      expect(byOwner.status).to.equal(403);
      expect(byOwner.body.code).to.equal('forbidden');
      const outsider = await ctx.server.request('patch', path(org, id), { token: newUser().token, body: { status: 'accepted' } });
      expect(outsider.status).to.equal(404);
      expect(outsider.body).to.deep.equal({ code: 'not_found', message: 'invitation not found', data: { issues: [] } });
      const declinedViaPatch = await ctx.server.request('patch', path(org, id), { token: invitee.token, body: { status: 'declined' } });
      expect(declinedViaPatch.status).to.equal(400);
      expect(declinedViaPatch.body.data.issues[0].path).to.deep.equal(['status']);
      expect(await ctx.db('organization_members').where({ organization_id: org })).to.have.length(1);
    });

    it('refuses an expired invitation with 409; it reads as expired and a new one can be sent', async () => {
      const owner = newUser();
      const org = await createOrganization(ctx.server, owner);
      const invitee = newUser();
      const id = (await invite(ctx.server, org, owner, invitee.email)).body.invitation.id;
      await ctx
        .db('invitations')
        .where({ id })
        .update({ expires_at: ctx.db.raw(`now() - interval '1 second'`) });
      const read = await ctx.server.request('get', path(org, id), { token: invitee.token });
      expect(read.body.invitation.status).to.equal('expired');
      const res = await ctx.server.request('patch', path(org, id), { token: invitee.token, body: { status: 'accepted' } });
      expect(res.status).to.equal(409);
      expect(res.body.message).to.equal('status: the invitation is expired, not pending');
      expect(await ctx.db('organization_members').where({ organization_id: org, user_id: invitee.id })).to.have.length(0);
      const fresh = await invite(ctx.server, org, owner, invitee.email);
      expect(fresh.status).to.equal(201);
      expect(await ctx.db('invitations').where({ id }).first('status')).to.deep.equal({ status: 'expired' });
    });
  });

  describe('POST .../decline', () => {
    it('lets the invitee decline once; afterwards it cannot be accepted', async () => {
      const owner = newUser();
      const org = await createOrganization(ctx.server, owner);
      const invitee = newUser();
      const id = (await invite(ctx.server, org, owner, invitee.email)).body.invitation.id;
      expect((await ctx.server.request('post', path(org, id, '/decline'), { token: owner.token })).status).to.equal(403);
      expect((await ctx.server.request('post', path(org, id, '/decline'), { token: newUser().token })).status).to.equal(404);
      const res = await ctx.server.request('post', path(org, id, '/decline'), { token: invitee.token });
      expect(res.status).to.equal(200);
      expect(res.body.invitation).to.include({ id, status: 'declined', accepted_at: null });
      expect((await ctx.server.request('post', path(org, id, '/decline'), { token: invitee.token })).status).to.equal(409);
      const accept = await ctx.server.request('patch', path(org, id), { token: invitee.token, body: { status: 'accepted' } });
      expect(accept.status).to.equal(409);
      expect(accept.body.message).to.equal('status: the invitation is declined, not pending');
      expect(await actions(org)).to.include('invitation.declined');
    });
  });

  describe('PATCH {"role"}', () => {
    it('lets managers change the role of a pending invitation; owner invitations stay with owners', async () => {
      const owner = newUser();
      const org = await createOrganization(ctx.server, owner);
      const admin = await joinedMember(ctx.server, org, owner, 'admin');
      const member = await joinedMember(ctx.server, org, owner, 'member');
      const invitee = newUser();
      const id = (await invite(ctx.server, org, owner, invitee.email)).body.invitation.id;
      const res = await ctx.server.request('patch', path(org, id), { token: admin.token, body: { role: 'admin' } });
      expect(res.status).to.equal(200);
      expect(res.body.invitation).to.include({ role: 'admin', status: 'pending' });
      const activity = await ctx.db('activity_events').where({ organization_id: org, action: 'invitation.role_changed' }).first();
      expect(activity).to.include({ actor_id: admin.id, subject_id: id });
      expect(activity.data).to.deep.equal({ email: invitee.email, before: 'member', after: 'admin' });
      expect((await ctx.server.request('patch', path(org, id), { token: admin.token, body: { role: 'owner' } })).status).to.equal(403);
      expect((await ctx.server.request('patch', path(org, id), { token: member.token, body: { role: 'member' } })).status).to.equal(403);
      expect((await ctx.server.request('patch', path(org, id), { token: invitee.token, body: { role: 'owner' } })).status).to.equal(403);
      expect((await ctx.server.request('patch', path(org, id), { token: newUser().token, body: { role: 'member' } })).status).to.equal(404);
      const both = await ctx.server.request('patch', path(org, id), { token: owner.token, body: { role: 'member', status: 'accepted' } });
      expect(both.status).to.equal(400);
      expect(both.body.message).to.equal('body: send exactly one of role, status');
      expect((await ctx.server.request('patch', path(org, id), { token: owner.token, body: {} })).status).to.equal(400);
      expect((await ctx.server.request('patch', path(org, id), { token: owner.token, body: { role: 'ghost' } })).status).to.equal(400);
      const toOwner = await ctx.server.request('patch', path(org, id), { token: owner.token, body: { role: 'owner' } });
      expect(toOwner.body.invitation.role).to.equal('owner');
      expect((await ctx.server.request('patch', path(org, id), { token: admin.token, body: { role: 'member' } })).status).to.equal(403);
      expect((await ctx.db('invitations').where({ id }).first('role')).role).to.equal('owner');
    });
  });

  describe('DELETE (revoke)', () => {
    it('revokes a pending invitation (204), keeps it listed as revoked, and refuses it afterwards', async () => {
      const owner = newUser();
      const org = await createOrganization(ctx.server, owner);
      const member = await joinedMember(ctx.server, org, owner);
      const invitee = newUser();
      const id = (await invite(ctx.server, org, owner, invitee.email)).body.invitation.id;
      expect((await ctx.server.request('delete', path(org, id), { token: member.token })).status).to.equal(403);
      expect((await ctx.server.request('delete', path(org, id), { token: invitee.token })).status).to.equal(403);
      expect((await ctx.server.request('delete', path(org, id), { token: newUser().token })).status).to.equal(404);
      const res = await ctx.server.request('delete', path(org, id), { token: owner.token });
      expect(res.status).to.equal(204);
      expect(res.body).to.equal(undefined);
      const row = await ctx.db('invitations').where({ id }).first();
      expect(row).to.include({ status: 'revoked', revoked_by_id: owner.id });
      expect((await ctx.server.request('get', path(org, id), { token: owner.token })).body.invitation.status).to.equal('revoked');
      expect((await ctx.server.request('delete', path(org, id), { token: owner.token })).status).to.equal(409);
      const accept = await ctx.server.request('patch', path(org, id), { token: invitee.token, body: { status: 'accepted' } });
      expect(accept.status).to.equal(409);
      expect(accept.body.message).to.equal('status: the invitation is revoked, not pending');
      const logged = await ctx.db('activity_events').where({ organization_id: org, action: 'invitation.revoked' });
      expect(logged.map((a) => [a.actor_id, a.subject_id])).to.deep.equal([[owner.id, id]]);
    });
  });
});
