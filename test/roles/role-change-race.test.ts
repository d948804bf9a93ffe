import { expect } from 'chai';
import { whileChangeInFlight } from '../support/in-flight.ts';
import { addMember, createOrganization } from '../support/organizations.ts';
import { newUser } from '../support/server.ts';
import { useServer } from '../support/suite.ts';

// Defining or deleting a role decides on the caller's role as it is then, read with the members
// domain's lock: a demotion in flight is waited for, then seen (whileChangeInFlight holds it open
// with the locks PATCH /members/{user_id} takes).
describe('roles: a concurrent demotion of the caller is waited for, then seen', () => {
  const ctx = useServer();
  const rolesPath = (org: string) => `/organizations/${org}/roles`;

  /** An organization whose admin is being demoted to member by a change still in flight. */
  async function demotionOf(run: (org: string, admin: ReturnType<typeof newUser>) => ReturnType<typeof ctx.server.request>) {
    const owner = newUser();
    const admin = newUser();
    const org = await createOrganization(ctx.server, owner);
    await addMember(ctx.db, org, admin, 'admin');
    await ctx.db('organization_roles').insert({ organization_id: org, key: 'reviewer', name: 'Reviewer', permissions: ['members.view'] });
    const res = await whileChangeInFlight(
      ctx.db,
      async (trx) => {
        await trx('organization_members').where({ organization_id: org, user_id: admin.id }).forUpdate().first('role');
        await trx('organization_members').where({ organization_id: org, user_id: admin.id }).update({ role: 'member' });
      },
      () => run(org, admin),
    );
    return { org, res };
  }

  it('defining a role: 403 (the new role lacks roles.manage) and the role is not written', async () => {
    const { org, res } = await demotionOf((org, admin) =>
      ctx.server.request('patch', rolesPath(org), { token: admin.token, body: { key: 'auditor', name: 'Auditor', permissions: ['members.view'] } }),
    );
    expect(res.status, JSON.stringify(res.body)).to.equal(403);
    expect(res.body).to.deep.equal({ code: 'forbidden', message: 'your role "member" lacks the permission roles.manage', data: { issues: [] } });
    expect(await ctx.db('organization_roles').where({ organization_id: org }).orderBy('key').pluck('key')).to.deep.equal(['reviewer']);
  });

  it('deleting a role: 403 (the new role lacks roles.manage) and the role stays', async () => {
    const { org, res } = await demotionOf((org, admin) => ctx.server.request('delete', rolesPath(org), { token: admin.token, query: { key: 'reviewer' } }));
    expect(res.status, JSON.stringify(res.body)).to.equal(403);
    expect(res.body).to.deep.equal({ code: 'forbidden', message: 'your role "member" lacks the permission roles.manage', data: { issues: [] } });
    expect(await ctx.db('organization_roles').where({ organization_id: org }).pluck('key')).to.deep.equal(['reviewer']);
  });
});
