import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { webhookDeliveryJob } from '../../src/webhooks/jobs.ts';
import { createOrganization, newMember, newOperator, newUser, type TestUser } from '../support/factories.ts';
import { show, startOpsStack, type OpsStack } from './support.ts';

/**
 * Issue 36: webhook deliveries are grouped by their endpoint (per-endpoint concurrency), and the
 * console filed them under the endpoint id as their organization. Every job's organization is its
 * organization: a tenant admin's filter finds all of theirs and only theirs.
 */
describe('job console: webhook deliveries belong to their organization', function () {
  this.timeout(60_000);
  let stack: OpsStack;
  let operator: TestUser;
  let owner: TestUser;
  let admin: TestUser;
  let otherOwner: TestUser;
  let org: string;
  let otherOrg: string;
  const get = (path: string, token: string, query?: Record<string, string>) => stack.server.request('get', path, { token, ...(query && { query }) });

  before(async () => {
    stack = await startOpsStack();
    operator = newOperator();
    owner = newUser();
    otherOwner = newUser();
    [org, otherOrg] = await Promise.all([createOrganization(stack.server, owner), createOrganization(stack.server, otherOwner)]);
    admin = await newMember(stack.db, org, 'admin');
  });
  after(() => stack?.stop());

  /** Deliveries as the fan-out enqueues them: each grouped by its endpoint, for the organization. Returns the job ids. */
  async function deliveries(organizationId: string, endpoints: string[]): Promise<string[]> {
    const ids = endpoints.map(() => randomUUID());
    await stack.db.transaction((trx) =>
      stack.queue.enqueueMany(
        trx,
        webhookDeliveryJob,
        endpoints.map((endpoint, i) => ({ payload: { delivery_id: ids[i]! }, organizationId, group: endpoint })),
      ),
    );
    const rows = await stack
      .db('pgboss.job')
      .where({ name: webhookDeliveryJob.name })
      .whereRaw(`data->>'delivery_id' = ANY(?::text[])`, [ids])
      .select('id', 'group_id');
    expect(rows).to.have.length(endpoints.length);
    expect(rows.map((row) => row.group_id).sort()).to.deep.equal([...endpoints].sort());
    return rows.map((row) => row.id as string);
  }
  const listed = async (token: string, query: Record<string, string>) => {
    const res = await get('/ops/jobs', token, { queue: webhookDeliveryJob.name, limit: '100', ...query });
    expect(res.status, show(res)).to.equal(200);
    return res.body.items as { id: string; organization_id: string | null }[];
  };

  it('a tenant admin’s GET /ops/jobs?organization_id=…&queue=webhooks.deliver.v1 finds all their deliveries, each filed under their organization', async () => {
    const [endpointA, endpointB, endpointC] = [randomUUID(), randomUUID(), randomUUID()];
    const ours = await deliveries(org, [endpointA, endpointA, endpointB]);
    const theirs = await deliveries(otherOrg, [endpointC]);

    const own = await listed(admin.token, { organization_id: org });
    expect(own.map((job) => job.id).sort()).to.deep.equal([...ours].sort());
    expect(own.every((job) => job.organization_id === org)).to.equal(true);
    const other = await listed(otherOwner.token, { organization_id: otherOrg });
    expect(other.map((job) => job.id)).to.deep.equal(theirs);
    expect(other[0]!.organization_id).to.equal(otherOrg);

    // The operator's view names the organization too, and an endpoint id is no organization's.
    const all = await listed(operator.token, {});
    expect(all.filter((job) => ours.includes(job.id)).map((job) => job.organization_id)).to.deep.equal([org, org, org]);
    expect(await listed(operator.token, { organization_id: endpointA })).to.deep.equal([]);

    // The admin opens one of them (the job's organization decides who may), the other organization's owner cannot.
    const detail = await get(`/ops/jobs/${ours[0]}`, admin.token);
    expect(detail.status, show(detail)).to.equal(200);
    expect(detail.body.job ?? detail.body).to.deep.include({ id: ours[0], organization_id: org });
    expect((await get(`/ops/jobs/${ours[0]}`, otherOwner.token)).status).to.equal(404);
  });
});
