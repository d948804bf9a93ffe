import { expect } from 'chai';
import { addMember, createOrganization } from '../support/organizations.ts';
import { newUser } from '../support/server.ts';
import { useServer } from '../support/suite.ts';

describe('DELETE /organizations/{id}/roles?key= needs the authority that changing the role needs', () => {
  const ctx = useServer();

  it('an admin cannot delete a role carrying billing.manage (403, role kept); an owner can (204)', async () => {
    const owner = newUser();
    const admin = newUser();
    const org = await createOrganization(ctx.server, owner);
    await addMember(ctx.db, org, admin, 'admin');
    const created = await ctx.server.request('patch', `/organizations/${org}/roles`, {
      token: owner.token,
      body: { key: 'treasurer', name: 'Treasurer', permissions: ['billing.manage', 'members.view'] },
    });
    expect(created.status, JSON.stringify(created.body)).to.equal(200);

    // Changing it is refused to the admin, and so is deleting it.
    const change = await ctx.server.request('patch', `/organizations/${org}/roles`, {
      token: admin.token,
      body: { key: 'treasurer', name: 'Treasurer', permissions: ['members.view'] },
    });
    expect(change.status).to.equal(403);
    const denied = await ctx.server.request('delete', `/organizations/${org}/roles`, { token: admin.token, query: { key: 'treasurer' } });
    expect(denied.status, JSON.stringify(denied.body)).to.equal(403);
    expect(denied.body).to.deep.equal({
      code: 'forbidden',
      message: 'you cannot delete the role "treasurer": it carries billing.manage, which your role "admin" lacks',
      data: { issues: [] },
    });
    expect(await ctx.db('organization_roles').where({ organization_id: org, key: 'treasurer' }).first('key')).to.deep.equal({ key: 'treasurer' });
    expect(await ctx.db('activity_events').where({ organization_id: org, action: 'role.deleted' }).count<{ count: number }[]>('* as count')).to.deep.equal([
      { count: 0 },
    ]);

    const deleted = await ctx.server.request('delete', `/organizations/${org}/roles`, { token: owner.token, query: { key: 'treasurer' } });
    expect(deleted.status, JSON.stringify(deleted.body)).to.equal(204);
    expect(await ctx.db('organization_roles').where({ organization_id: org, key: 'treasurer' }).first()).to.equal(undefined);
  });

  it('an admin still deletes a role within their own permissions', async () => {
    const owner = newUser();
    const admin = newUser();
    const org = await createOrganization(ctx.server, owner);
    await addMember(ctx.db, org, admin, 'admin');
    await ctx.db('organization_roles').insert({ organization_id: org, key: 'reviewer', name: 'Reviewer', permissions: ['members.view'] });
    const res = await ctx.server.request('delete', `/organizations/${org}/roles`, { token: admin.token, query: { key: 'reviewer' } });
    expect(res.status, JSON.stringify(res.body)).to.equal(204);
    expect(await ctx.db('organization_roles').where({ organization_id: org, key: 'reviewer' }).first()).to.equal(undefined);
  });
});
