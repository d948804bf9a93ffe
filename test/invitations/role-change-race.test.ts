import { expect } from 'chai';
import type { Knex } from 'knex';
import type { ApiResponse } from '../support/server.ts';
import { eventually } from '../support/eventually.ts';
import { addMember, createOrganization } from '../support/organizations.ts';
import { newUser } from '../support/server.ts';
import { useServer } from '../support/suite.ts';
import { invite } from './helpers.ts';

// An invitation decides on the inviter's role (and on the invited role) as they are when it is
// written, like a member's role change does: a role change or role deletion in flight is waited
// for, then seen. Each test holds such a change open in its own transaction — taking exactly the
// locks the members and roles domains take — sends the request, checks that the request waits for
// it, commits it, and asserts the request decided on the committed state.
describe('invitations: a concurrent role change is waited for, then seen', () => {
  const ctx = useServer();

  /** A request of the API that waits on a row lock of this test's database. */
  const waitingOnALock = async () => {
    const { rows } = await ctx.db.raw(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`);
    return rows[0].n > 0;
  };

  /** Holds `change` open while `request` runs; commits it once the request waits on its locks. */
  async function whileChangeInFlight(change: (trx: Knex.Transaction) => Promise<void>, request: () => Promise<ApiResponse>): Promise<ApiResponse> {
    const trx = await ctx.db.transaction();
    let answer: Promise<ApiResponse> | undefined;
    try {
      await change(trx);
      answer = request();
      const early = answer.then((res) => {
        throw new Error(`answered ${res.status} without waiting for the change in flight: ${JSON.stringify(res.body)}`);
      });
      await Promise.race([eventually('the request waits for the change in flight', waitingOnALock, { timeoutMs: 5000 }), early]);
      early.catch(() => undefined);
      await trx.commit();
    } finally {
      if (!trx.isCompleted()) await trx.rollback();
    }
    return answer!;
  }

  it('an admin demoted while creating an invitation gets 403 (the new role lacks invitations.manage) and nothing is written', async () => {
    const owner = newUser();
    const admin = newUser();
    const org = await createOrganization(ctx.server, owner);
    await addMember(ctx.db, org, admin, 'admin');
    // The admin's gate passes first (a read before the change), so only the service's own decision can refuse.
    expect((await ctx.server.request('get', `/organizations/${org}/invitations`, { token: admin.token })).status).to.equal(200);

    const res = await whileChangeInFlight(
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
