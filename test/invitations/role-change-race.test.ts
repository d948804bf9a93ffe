import { expect } from 'chai';
import { whileChangeInFlight } from '../support/in-flight.ts';
import { addMember, createOrganization } from '../support/organizations.ts';
import { newUser } from '../support/server.ts';
import { useServer } from '../support/suite.ts';
import { invite } from './helpers.ts';

// An invitation decides on the inviter's role (and on the invited role) as they are when it is
// written, like a member's role change does: a role change or role deletion in flight is waited
// for, then seen. Each test holds such a change open (whileChangeInFlight, taking exactly the locks
// the members and roles domains take) and asserts the request decided on the committed state.
describe('invitations: a concurrent role change is waited for, then seen', () => {
  const ctx = useServer();

  it('an admin demoted while creating an invitation gets 403 (the new role lacks invitations.manage) and nothing is written', async () => {
    const owner = newUser();
    const admin = newUser();
    const org = await createOrganization(ctx.server, owner);
    await addMember(ctx.db, org, admin, 'admin');
    // The admin's gate passes first (a read before the change), so only the service's own decision can refuse.
    expect((await ctx.server.request('get', `/organizations/${org}/invitations`, { token: admin.token })).status).to.equal(200);

    const res = await whileChangeInFlight(
      ctx.db,
      // What PATCH /members/{admin} { role: member } does: the target's row locked for update, then changed.
      async (trx) => {
        await trx('organization_members').where({ organization_id: org, user_id: admin.id }).forUpdate().first('role');
        await trx('organization_members').where({ organization_id: org, user_id: admin.id }).update({ role: 'member' });
      },
      () => invite(ctx.server, org, admin, 'late@example.test', 'member'),
    );

    expect(res.status, JSON.stringify(res.body)).to.equal(403);
    expect(res.body).to.deep.equal({ code: 'forbidden', message: 'your role "member" lacks the permission invitations.manage', data: { issues: [] } });
    expect(await ctx.db('invitations').where({ organization_id: org })).to.have.length(0);
    expect(await ctx.db('activity_events').where({ organization_id: org, action: 'invitation.created' })).to.have.length(0);
  });

  it('a role deleted while its invitation is being accepted: 409 and no member holds the deleted role', async () => {
    const owner = newUser();
    const invitee = newUser();
    const org = await createOrganization(ctx.server, owner);
    await ctx.db('organization_roles').insert({ organization_id: org, key: 'editor', name: 'Editor', permissions: ['members.view'] });
    const invitation = (await invite(ctx.server, org, owner, invitee.email, 'editor')).body.invitation.id as string;

    const res = await whileChangeInFlight(
      ctx.db,
      // What DELETE /roles?key=editor does: the role locked for update, its holders counted (none yet), the role deleted.
      async (trx) => {
        await trx('organization_roles').where({ organization_id: org, key: 'editor' }).forUpdate().first('key');
        await trx('organization_roles').where({ organization_id: org, key: 'editor' }).delete();
      },
      () => ctx.server.request('patch', `/organizations/${org}/invitations/${invitation}`, { token: invitee.token, body: { status: 'accepted' } }),
    );

    expect(res.status, JSON.stringify(res.body)).to.equal(409);
    expect(res.body.message).to.equal('role: the invited role "editor" no longer exists; ask for a new invitation');
    expect(await ctx.db('organization_members').where({ organization_id: org, user_id: invitee.id })).to.have.length(0);
    expect((await ctx.db('invitations').where({ id: invitation }).first('status')).status).to.equal('pending');
  });
});
