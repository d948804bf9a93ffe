import { expect } from 'chai';
import { addMember, createOrganization } from '../support/organizations.ts';
import { newUser } from '../support/server.ts';
import { useServer } from '../support/suite.ts';

const defaults = {
  enabled: true,
  low_balance_thresholds: [100],
  notify_roles: ['owner', 'admin'],
  extra_recipients: [],
  updated_at: null,
  updated_by_id: null,
};

describe('alert policy', () => {
  const ctx = useServer();

  const policyPath = (org: string) => `/organizations/${org}/alert-policy`;

  it('reads the default policy for any member until one is set', async () => {
    const owner = newUser();
    const ada = newUser();
    const org = await createOrganization(ctx.server, owner);
    await addMember(ctx.db, org, ada, 'member');
    const res = await ctx.server.request('get', policyPath(org), { token: ada.token });
    expect(res.status).to.equal(200);
    expect(res.body).to.deep.equal({ alert_policy: defaults });
    expect(await ctx.db('organization_alert_policies').where({ organization_id: org })).to.deep.equal([]);
  });

  it('saves the fields sent over the current ones, records alert_policy.updated, and reads back', async () => {
    const owner = newUser();
    const org = await createOrganization(ctx.server, owner);
    await ctx.db('organization_roles').insert({ organization_id: org, key: 'finance', name: 'Finance', permissions: [] });
    const first = await ctx.server.request('patch', policyPath(org), {
      token: owner.token,
      body: { low_balance_thresholds: [500, 100, 0], notify_roles: ['owner', 'finance'], extra_recipients: ['Money@Example.com'] },
    });
    expect(first.status).to.equal(200);
    let row = await ctx.db('organization_alert_policies').where({ organization_id: org }).first();
    expect(first.body).to.deep.equal({
      alert_policy: {
        enabled: true,
        low_balance_thresholds: [500, 100, 0],
        notify_roles: ['owner', 'finance'],
        extra_recipients: ['money@example.com'],
        updated_at: row.updated_at.toISOString(),
        updated_by_id: owner.id,
      },
    });
    const second = await ctx.server.request('patch', policyPath(org), { token: owner.token, body: { enabled: false, extra_recipients: [] } });
    row = await ctx.db('organization_alert_policies').where({ organization_id: org }).first();
    expect(second.body.alert_policy).to.deep.equal({
      ...first.body.alert_policy,
      enabled: false,
      extra_recipients: [],
      updated_at: row.updated_at.toISOString(),
    });
    expect((await ctx.server.request('get', policyPath(org), { token: owner.token })).body).to.deep.equal(second.body);

    const events = await ctx
      .db('activity_events')
      .where({ organization_id: org, action: 'alert_policy.updated' })
      .orderBy('created_at')
      .select('actor_id', 'subject_type', 'subject_id', 'data');
    expect(events).to.deep.equal([
      {
        actor_id: owner.id,
        subject_type: 'alert_policy',
        subject_id: org,
        data: { changes: { low_balance_thresholds: [500, 100, 0], notify_roles: ['owner', 'finance'], extra_recipients: ['money@example.com'] } },
      },
      { actor_id: owner.id, subject_type: 'alert_policy', subject_id: org, data: { changes: { enabled: false, extra_recipients: [] } } },
    ]);
  });

  it('rejects invalid thresholds, roles and recipients with 400 naming the field, writing nothing', async () => {
    const owner = newUser();
    const org = await createOrganization(ctx.server, owner);
    const cases: [unknown, (string | number)[], RegExp?][] = [
      [{}, []],
      [{ low_balance_thresholds: [100, 500] }, ['low_balance_thresholds'], /descending/],
      [{ low_balance_thresholds: [100, 100] }, ['low_balance_thresholds'], /distinct/],
      [{ low_balance_thresholds: [-1] }, ['low_balance_thresholds', 0]],
      [{ low_balance_thresholds: [1.5] }, ['low_balance_thresholds', 0]],
      [{ low_balance_thresholds: Array.from({ length: 11 }, (_, i) => 1000 - i) }, ['low_balance_thresholds']],
      [{ notify_roles: ['owner', 'owner'] }, ['notify_roles']],
      [{ notify_roles: ['owner', 'wizards'] }, ['notify_roles', 1], /^notify_roles\.1: the organization has no role "wizards"$/],
      [{ extra_recipients: ['not-an-email'] }, ['extra_recipients', 0]],
      [{ extra_recipients: ['a@example.com', 'A@example.com'] }, ['extra_recipients'], /repeat/],
      [{ enabled: 'yes' }, ['enabled']],
      [{ enabled: true, colour: 'red' }, []],
    ];
    for (const [body, field, message] of cases) {
      const res = await ctx.server.request('patch', policyPath(org), { token: owner.token, body });
      expect(res.status, JSON.stringify(body)).to.equal(400);
      expect(res.body.code).to.equal('validation_failed');
      if (field.length) expect(res.body.data.issues[0].path, JSON.stringify(body)).to.deep.equal(field);
      if (message) expect(res.body.message).to.match(message);
    }
    expect(await ctx.db('organization_alert_policies').where({ organization_id: org })).to.deep.equal([]);
    expect(await ctx.db('activity_events').where({ organization_id: org, action: 'alert_policy.updated' })).to.deep.equal([]);
  });

  it('needs alert_policy.manage to change (403) and membership to read (404)', async () => {
    const owner = newUser();
    const ada = newUser();
    const outsider = newUser();
    const org = await createOrganization(ctx.server, owner);
    await addMember(ctx.db, org, ada, 'member');
    const forbidden = await ctx.server.request('patch', policyPath(org), { token: ada.token, body: { enabled: false } });
    expect(forbidden.status).to.equal(403);
    expect(forbidden.body).to.deep.equal({ code: 'forbidden', message: 'your role "member" lacks the permission alert_policy.manage', data: { issues: [] } });
    const notFound = { code: 'not_found', message: 'organization not found', data: { issues: [] } };
    const read = await ctx.server.request('get', policyPath(org), { token: outsider.token });
    expect(read.status).to.equal(404);
    expect(read.body).to.deep.equal(notFound);
    const write = await ctx.server.request('patch', policyPath(org), { token: outsider.token, body: { enabled: false } });
    expect(write.status).to.equal(404);
    expect(write.body).to.deep.equal(notFound);
    expect(await ctx.db('organization_alert_policies').where({ organization_id: org })).to.deep.equal([]);
  });
});
