import { expect } from 'chai';
import { createOrganization, newMember, newOperator, newUser, type TestUser } from '../support/factories.ts';
import type { ApiResponse } from '../support/server.ts';
import { useServer } from '../support/suite.ts';

const show = (res: ApiResponse) => `${res.status} ${JSON.stringify(res.body)}`;

/**
 * An organization's owners and admins see that their work is paused, since when and until when;
 * who set a pause and why only for the pauses their organization set. Operators see everything,
 * and only they end an operator's pause.
 */
describe('pauses as an organization sees them (issue 19 item 3)', () => {
  const ctx = useServer();
  let operator: TestUser;
  let owner: TestUser;
  let admin: TestUser;
  let member: TestUser;
  let otherOwner: TestUser;
  let org: string;
  let otherOrg: string;
  let queues: string[];
  const operatorReasons = ['internal: org throttled after provider abuse report #4411', 'incident 7: database failover'];

  const get = (user: TestUser, path: string, query: Record<string, string> = {}) => ctx.server.request('get', path, { token: user.token, query });
  const post = (user: TestUser, path: string, body: unknown = {}) => ctx.server.request('post', path, { token: user.token, body });
  const pauseRow = (id: string) => ctx.db('job_pauses').where({ id }).first();

  before(async () => {
    operator = newOperator();
    owner = newUser();
    otherOwner = newUser();
    [org, otherOrg] = await Promise.all([createOrganization(ctx.server, owner), createOrganization(ctx.server, otherOwner)]);
    admin = await newMember(ctx.db, org, 'admin');
    member = await newMember(ctx.db, org);
    queues = ((await ctx.db('pgboss.queue').pluck('name')) as string[]).filter((name) => !name.endsWith('.dead')).sort();
    expect(queues.length).to.be.at.least(4);
  });

  it('tenants see an operator’s pauses without who or why, their own with both; operators see all of it', async () => {
    const onOrg = await post(operator, '/ops/pauses', { scope: 'organization', queue: queues[0], organization_id: org, reason: operatorReasons[0] });
    expect(onOrg.status, show(onOrg)).to.equal(201);
    expect(onOrg.body.pause).to.include({ set_by: 'operator', reason: operatorReasons[0], created_by: operator.id, can_resume: true });
    const serviceWide = await post(operator, '/ops/pauses', { scope: 'queue', queue: queues[1], reason: operatorReasons[1] });
    expect(serviceWide.status, show(serviceWide)).to.equal(201);
    const own = await post(admin, '/ops/pauses', { scope: 'organization', queue: queues[2], organization_id: org, reason: 'our import storm' });
    expect(own.status, show(own)).to.equal(201);
    const ownRow = await pauseRow(own.body.pause.id);
    expect(ownRow.set_by).to.equal('organization');
    const since = async (id: string) => (await pauseRow(id)).created_at.toISOString();

    const asTenant = async (id: string, scope: string, queue: string) => ({
      id,
      scope,
      queue,
      organization_id: scope === 'queue' ? null : org,
      schedule: null,
      set_by: 'operator',
      expires_at: null,
      created_at: await since(id),
      resumed_at: null,
      open: true,
      can_resume: false,
      reason: null,
      created_by: null,
      resumed_by: null,
    });
    const expected = [
      {
        ...(await asTenant(own.body.pause.id, 'organization', queues[2]!)),
        set_by: 'organization',
        can_resume: true,
        reason: 'our import storm',
        created_by: admin.id,
      },
      await asTenant(serviceWide.body.pause.id, 'queue', queues[1]!),
      await asTenant(onOrg.body.pause.id, 'organization', queues[0]!),
    ];
    expect(own.body.pause).to.deep.equal(expected[0]);

    for (const tenant of [owner, admin]) {
      const listed = await get(tenant, '/ops/pauses', { organization_id: org });
      expect(listed.status, show(listed)).to.equal(200);
      expect(listed.body).to.deep.equal({ items: expected, next_cursor: null });
      const health = await get(tenant, '/ops/queues', { organization_id: org });
      expect(health.status, show(health)).to.equal(200);
      const pausesOf = (queue: string) => health.body.items.find((q: { name: string }) => q.name === queue).pauses;
      expect(pausesOf(queues[0]!)).to.deep.equal([expected[2]]);
      expect(pausesOf(queues[1]!)).to.deep.equal([expected[1]]);
      expect(pausesOf(queues[2]!)).to.deep.equal([expected[0]]);
      for (const body of [listed.body, health.body]) {
        const text = JSON.stringify(body);
        for (const secret of [...operatorReasons, operator.id]) expect(text).to.not.include(secret);
      }
    }
    // Another organization sees the service-wide pause, not this one's.
    const other = await get(otherOwner, '/ops/pauses', { organization_id: otherOrg });
    expect(other.body.items.map((p: { id: string }) => p.id)).to.deep.equal([serviceWide.body.pause.id]);
    expect((await get(member, '/ops/pauses', { organization_id: org })).status).to.equal(403);

    const all = await get(operator, '/ops/pauses');
    const byId = new Map(all.body.items.map((p: { id: string }) => [p.id, p]));
    expect(byId.get(onOrg.body.pause.id)).to.include({ reason: operatorReasons[0], created_by: operator.id, set_by: 'operator', can_resume: true });
    expect(byId.get(serviceWide.body.pause.id)).to.include({ reason: operatorReasons[1], created_by: operator.id, set_by: 'operator' });
    expect(byId.get(own.body.pause.id)).to.include({ reason: 'our import storm', created_by: admin.id, set_by: 'organization' });

    for (const id of [onOrg.body.pause.id, serviceWide.body.pause.id, own.body.pause.id])
      expect((await post(operator, `/ops/pauses/${id}/resume`)).status).to.equal(200);

    // The audit log tells the organization nothing more: an operator's pause entries stay out of its view.
    const pauseIdsIn = (items: { action: string; target: { pause_id?: string } }[]) => items.map((a) => `${a.action} ${a.target.pause_id}`);
    const tenantLog = await get(owner, '/ops/audit-log', { organization_id: org });
    expect(tenantLog.status, show(tenantLog)).to.equal(200);
    expect(pauseIdsIn(tenantLog.body.items)).to.deep.equal([`pause.create ${own.body.pause.id}`]);
    for (const secret of [...operatorReasons, operator.id]) expect(JSON.stringify(tenantLog.body)).to.not.include(secret);
    const operatorLog = await get(operator, '/ops/audit-log', { organization_id: org });
    expect(pauseIdsIn(operatorLog.body.items)).to.deep.equal([
      `pause.resume ${own.body.pause.id}`,
      `pause.resume ${onOrg.body.pause.id}`,
      `pause.create ${own.body.pause.id}`,
      `pause.create ${onOrg.body.pause.id}`,
    ]);
  });

  it('only operators end an operator’s pause (403 to the organization’s admins, 404 to others); admins end their own', async () => {
    const onOrg = (await post(operator, '/ops/pauses', { scope: 'organization', queue: queues[0], organization_id: org, reason: operatorReasons[0] })).body
      .pause;
    const serviceWide = (await post(operator, '/ops/pauses', { scope: 'queue', queue: queues[1], reason: operatorReasons[1] })).body.pause;
    const own = (await post(admin, '/ops/pauses', { scope: 'organization', queue: queues[2], organization_id: org, reason: 'ours' })).body.pause;
    const ownEndedByOperator = (await post(owner, '/ops/pauses', { scope: 'organization', queue: queues[3], organization_id: org, reason: 'ours too' })).body
      .pause;

    for (const tenant of [owner, admin]) {
      for (const [pause, message] of [
        [onOrg, 'only operators of the service may end a pause an operator set'],
        [serviceWide, 'only operators of the service may end a service-wide pause'],
      ] as const) {
        const refused = await post(tenant, `/ops/pauses/${pause.id}/resume`, { reason: 'we want it back' });
        expect(refused.status, show(refused)).to.equal(403);
        expect(refused.body).to.deep.equal({ code: 'forbidden', message, data: { issues: [] } });
        expect((await pauseRow(pause.id)).resumed_at).to.equal(null);
      }
    }
    const stranger = newUser();
    for (const [user, pause] of [
      [otherOwner, onOrg],
      [otherOwner, own],
      [stranger, serviceWide],
      [member, own],
    ] as const) {
      const hidden = await post(user, `/ops/pauses/${pause.id}/resume`);
      expect(hidden.status, show(hidden)).to.equal(404);
      expect((await pauseRow(pause.id)).resumed_at).to.equal(null);
    }
    const audit = await ctx.db('operator_actions').whereRaw(`target->>'pause_id' = ?`, [onOrg.id]).pluck('action');
    expect(audit).to.deep.equal(['pause.create']);

    const mine = await post(admin, `/ops/pauses/${own.id}/resume`, { reason: 'storm over' });
    expect(mine.status, show(mine)).to.equal(200);
    expect(mine.body.pause).to.include({ open: false, resumed_by: admin.id, set_by: 'organization', can_resume: true, reason: 'ours' });

    for (const pause of [onOrg, serviceWide, ownEndedByOperator]) {
      const ended = await post(operator, `/ops/pauses/${pause.id}/resume`, { reason: 'done' });
      expect(ended.status, show(ended)).to.equal(200);
      expect(ended.body.pause).to.include({ open: false, resumed_by: operator.id });
    }
    const history = await get(owner, '/ops/pauses', { organization_id: org, open: 'false' });
    const seen = new Map(history.body.items.map((p: { id: string }) => [p.id, p]));
    expect(seen.get(onOrg.id)).to.include({ open: false, resumed_by: null, reason: null, created_by: null });
    expect(seen.get(ownEndedByOperator.id)).to.include({ open: false, resumed_by: null, reason: 'ours too', created_by: owner.id });
    expect(seen.get(own.id)).to.include({ open: false, resumed_by: admin.id });
    expect(JSON.stringify(history.body)).to.not.include(operator.id);
  });
});
