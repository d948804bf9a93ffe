import { expect } from 'chai';
import { addMember, createOrganization } from '../support/organizations.ts';
import { newUser, type TestUser } from '../support/server.ts';
import { useServer } from '../support/suite.ts';
import { invite } from './helpers.ts';

// Inviting with a role, or changing a pending invitation's role, needs the authority that changing a member's role needs.
describe('invitations: nobody invites with more power than they hold', () => {
  const ctx = useServer();
  const path = (org: string, id = '') => `/organizations/${org}/invitations${id && `/${id}`}`;

  /** An organization with an owner, an admin, and a "recruiter" (custom: invitations.manage + members.view only). */
  async function setUp() {
    const owner = newUser();
    const admin = newUser();
    const recruiter = newUser();
    const org = await createOrganization(ctx.server, owner);
    await ctx.db('organization_roles').insert([
      { organization_id: org, key: 'treasurer', name: 'Treasurer', permissions: ['members.view', 'billing.manage'] },
      { organization_id: org, key: 'reviewer', name: 'Reviewer', permissions: ['members.view'] },
      { organization_id: org, key: 'recruiter', name: 'Recruiter', permissions: ['members.view', 'invitations.manage'] },
    ]);
    await addMember(ctx.db, org, admin, 'admin');
    await addMember(ctx.db, org, recruiter, 'recruiter');
    return { org, owner, admin, recruiter };
  }

  const lacking = (role: string, actorRole: string, missing: string, doing = 'invite with') => ({
    code: 'forbidden',
    message: `you cannot ${doing} the role "${role}": it carries ${missing}, which your role "${actorRole}" lacks`,
    data: { issues: [] },
  });

  it('create: 403 for any role (built-in or custom) carrying a permission the inviter lacks; nothing written', async () => {
    const { org, owner, admin, recruiter } = await setUp();
    const cases: [TestUser, string, string, number, string?][] = [
      [admin, 'admin', 'treasurer', 403, 'billing.manage'],
      [admin, 'admin', 'reviewer', 201],
      [admin, 'admin', 'admin', 201],
      [recruiter, 'recruiter', 'member', 403, 'activity.view, credits.view, resources.create'],
      [recruiter, 'recruiter', 'admin', 403],
      [recruiter, 'recruiter', 'treasurer', 403, 'billing.manage'],
      [recruiter, 'recruiter', 'reviewer', 201],
      [owner, 'owner', 'treasurer', 201],
    ];
    for (const [actor, actorRole, role, status, missing] of cases) {
      const email = `${actorRole}-${role}-${Math.random().toString(36).slice(2)}@example.test`;
      const res = await invite(ctx.server, org, actor, email, role);
      expect(res.status, `${actorRole} invites with ${role}: ${JSON.stringify(res.body)}`).to.equal(status);
      if (missing) expect(res.body).to.deep.equal(lacking(role, actorRole, missing));
      if (status === 403) {
        expect(res.body.code).to.equal('forbidden');
        expect(await ctx.db('invitations').where({ organization_id: org, email })).to.have.length(0);
      }
    }
  });

  it('change: 403 to give a role carrying a permission the manager lacks, and to take one away; the owner may', async () => {
    const { org, owner, admin } = await setUp();
    const pending = (await invite(ctx.server, org, admin, 'pending@example.test', 'member')).body.invitation.id as string;
    const raised = await ctx.server.request('patch', path(org, pending), { token: admin.token, body: { role: 'treasurer' } });
    expect(raised.status).to.equal(403);
    expect(raised.body).to.deep.equal(lacking('treasurer', 'admin', 'billing.manage', 'grant'));
    expect(await ctx.db('invitations').where({ id: pending }).first('role')).to.deep.equal({ role: 'member' });

    const treasurer = (await invite(ctx.server, org, owner, 'treasurer@example.test', 'treasurer')).body.invitation.id as string;
    const lowered = await ctx.server.request('patch', path(org, treasurer), { token: admin.token, body: { role: 'reviewer' } });
    expect(lowered.status).to.equal(403);
    expect(lowered.body).to.deep.equal(lacking('treasurer', 'admin', 'billing.manage', 'take away'));
    expect(await ctx.db('invitations').where({ id: treasurer }).first('role')).to.deep.equal({ role: 'treasurer' });

    const within = await ctx.server.request('patch', path(org, pending), { token: admin.token, body: { role: 'reviewer' } });
    expect(within.status).to.equal(200);
    expect(within.body.invitation.role).to.equal('reviewer');
    const byOwner = await ctx.server.request('patch', path(org, pending), { token: owner.token, body: { role: 'treasurer' } });
    expect(byOwner.status).to.equal(200);
    expect(byOwner.body.invitation.role).to.equal('treasurer');
    expect(
      (await ctx.db('activity_events').where({ organization_id: org, action: 'invitation.role_changed' }).orderBy('created_at')).map((e) => e.data.after),
    ).to.deep.equal(['reviewer', 'treasurer']);
  });
});
