import { expect } from 'chai';
import type { Config } from '../../src/config/schema.ts';
import { runnableJob } from '../../src/app/jobs.ts';
import { createDb, type Db } from '../../src/db/knex.ts';
import { createLogger } from '../../src/platform/logger.ts';
import { webhookDeliveryJob, webhookEndpointDisabledEmailJob, ENDPOINT_CONCURRENCY } from '../../src/webhooks/jobs.ts';
import { startWorker, type WorkerProcess } from '../../workers/main.ts';
import { testConfig } from '../support/config.ts';
import { eventually } from '../support/eventually.ts';
import { createAsset, createOrganization, newMember, newOperator, newUser, type TestUser } from '../support/factories.ts';
import { testDatabase } from '../support/hooks.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { fakeSmtp } from '../support/smtp.ts';
import { anEvent, publishEvents, type Receiver, startReceiver, verify } from './support.ts';

/**
 * Delivery end to end: events fanned out in a committed transaction, a real worker running the
 * delivery jobs, a real HTTP receiver on loopback verifying signatures with the Standard Webhooks
 * reference verifier.
 */
describe('webhook delivery (worker)', function () {
  this.timeout(60_000);
  let receiver: Receiver;
  let smtp: Awaited<ReturnType<typeof fakeSmtp>>;
  let server: TestServer;
  let worker: WorkerProcess;
  let db: Db;
  let url: string;
  let config: Config;

  before(async () => {
    receiver = await startReceiver();
    smtp = await fakeSmtp();
    url = testDatabase().url;
    const overrides = { OUTBOUND_ALLOWLIST: `127.0.0.1:${receiver.port}`, SMTP_URL: smtp.url, WORKER_POLL_INTERVAL_SECONDS: '1' };
    server = await startTestServer(overrides, { databaseUrl: url });
    config = testConfig(overrides);
    worker = await startWorker(config, url, createLogger(config, 'test-worker'), {
      jobs: [runnableJob(webhookDeliveryJob), runnableJob(webhookEndpointDisabledEmailJob)],
    });
    db = createDb(url, { max: 3 });
  });
  after(async () => {
    await worker?.stop();
    await server?.stop();
    await db?.destroy();
    await receiver?.close();
    await smtp?.close();
  });

  let owner: TestUser;
  let org: string;
  beforeEach(async () => {
    owner = newUser();
    org = await createOrganization(server, owner);
  });

  const endpointsOf = (organizationId: string) => `/organizations/${organizationId}/webhook-endpoints`;
  async function createEndpoint(by: TestUser, path: string, eventTypes: string[] = ['*'], organizationId = org) {
    const res = await server.request('post', endpointsOf(organizationId), {
      token: by.token,
      body: { url: `${receiver.url}${path}`, event_types: eventTypes },
    });
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    return { id: res.body.webhook_endpoint.id as string, secret: res.body.secret as string };
  }
  const deliveriesOf = (endpointId: string) => db('webhook_deliveries').where({ endpoint_id: endpointId }).orderBy('created_at');
  const settled = (endpointId: string, count: number) =>
    eventually(`${count} deliveries of ${endpointId} settled`, async () => {
      const rows = await deliveriesOf(endpointId);
      return rows.length === count && rows.every((row) => row.status !== 'pending') ? rows : null;
    });
  const jobOf = (deliveryId: string) =>
    db('pgboss.job')
      .where({ name: webhookDeliveryJob.name })
      .whereRaw(`data->>'delivery_id' = ?`, [deliveryId])
      .first('id', 'state', 'retry_count', 'start_after');

  it('delivers a committed event, signed so that the standardwebhooks verifier accepts it; the attempt is logged', async () => {
    const endpoint = await createEndpoint(owner, '/signed', ['asset.enriched']);
    const other = await createEndpoint(owner, '/other-type', ['member.added']);
    const fox = await createAsset(server, owner, org, { title: 'Fox' });
    const event = anEvent(org, 'asset.enriched', { type: 'asset', id: fox.id }, { id: 'a1', title: 'Fox' });
    await publishEvents(db, url, [event]);
    const [delivery] = await settled(endpoint.id, 1);
    expect(delivery).to.include({ status: 'succeeded', attempts: 1, response_status: 200, response_body: 'ok', event_id: event.id });
    expect(delivery.latency_ms).to.be.a('number');
    const [request] = receiver.at('/signed');
    expect(request!.headers['webhook-id']).to.equal(event.id);
    expect(request!.headers['content-type']).to.equal('application/json');
    expect(verify(endpoint.secret, request!)).to.deep.equal({
      id: event.id,
      type: 'asset.enriched',
      organization_id: org,
      created_at: event.created_at,
      data: { object: { id: 'a1', title: 'Fox' } },
    });
    // A wrong secret or a changed body does not verify.
    expect(() => verify(other.secret, request!)).to.throw();
    expect(() => verify(endpoint.secret, { ...request!, body: request!.body.replace('Fox', 'Cat') })).to.throw();
    const attempts = await db('webhook_delivery_attempts').where({ delivery_id: delivery.id });
    expect(attempts).to.have.length(1);
    expect(attempts[0]).to.include({ attempt: 1, response_status: 200, error_code: null });
    // Its job is grouped by the endpoint (per-endpoint concurrency), its attempt history still names the organization.
    const job = await jobOf(delivery.id);
    await eventually(
      'the attempt recorded for the organization',
      async () => (await db('job_attempts').where({ job_id: job.id }).first('organization_id'))?.organization_id === org,
    );
    expect((await db('pgboss.job').where({ id: job.id }).first('group_id')).group_id).to.equal(endpoint.id);
    // Not subscribed: no delivery at all.
    expect(await deliveriesOf(other.id)).to.have.length(0);
    expect(receiver.at('/other-type')).to.have.length(0);

    const listed = await server.request('get', `${endpointsOf(org)}/${endpoint.id}/deliveries`, { token: owner.token });
    expect(listed.status).to.equal(200);
    expect(listed.body.items).to.have.length(1);
    expect(listed.body.items[0]).to.deep.include({ id: delivery.id, status: 'succeeded', attempts: 1, response_status: 200, event_type: 'asset.enriched' });
  });

  it('retries a 500 with exponential backoff and jitter (30–60 s, then 60–120 s), then succeeds; each attempt logged', async () => {
    let answers = [500, 503];
    receiver.on('/flaky', () => ({ status: answers.shift() ?? 200, body: 'x'.repeat(10_000) }));
    const endpoint = await createEndpoint(owner, '/flaky');
    await publishEvents(db, url, [anEvent(org)]);
    const [pending] = await eventually('the first attempt recorded', async () => {
      const rows = await deliveriesOf(endpoint.id);
      return rows[0]?.attempts === 1 ? rows : null;
    });
    const delays: number[] = [];
    for (const attempt of [1, 2]) {
      const job = await eventually(`attempt ${attempt} handed back to pg-boss for a retry`, async () => {
        const row = await jobOf(pending.id);
        return row?.state === 'retry' && row.retry_count === attempt - 1 ? row : null;
      });
      const logged = await db('webhook_delivery_attempts').where({ delivery_id: pending.id, attempt }).first();
      delays.push((job.start_after.getTime() - logged.created_at.getTime()) / 1000);
      // The body is kept, truncated to 4 KiB.
      expect(logged.response_body).to.have.length(4096);
      // The clock moves on: make the retry due now instead of waiting for it.
      await db('pgboss.job').where({ id: job.id }).update({ start_after: db.fn.now() });
      await eventually(`attempt ${attempt + 1} ran`, async () => (await db('webhook_delivery_attempts').where({ delivery_id: pending.id })).length > attempt);
    }
    expect(delays[0]).to.be.within(30, 61);
    expect(delays[1]).to.be.within(60, 121);
    const [done] = await settled(endpoint.id, 1);
    expect(done).to.include({ status: 'succeeded', attempts: 3, response_status: 200 });
    const attempts = await db('webhook_delivery_attempts').where({ delivery_id: done.id }).orderBy('attempt').pluck('response_status');
    expect(attempts).to.deep.equal([500, 503, 200]);
    expect(receiver.at('/flaky').map((r) => r.headers['webhook-id'])).to.deep.equal(Array(3).fill(done.event_id));
    answers = [];
    // The endpoint was failing and recovered.
    expect((await db('webhook_endpoints').where({ id: endpoint.id }).first('failing_since')).failing_since).to.equal(null);
  });

  it('gives up on a receiver that does not answer within 10 s and retries it', async function () {
    this.timeout(40_000);
    receiver.on('/hang', () => ({ delayMs: 15_000 }));
    const endpoint = await createEndpoint(owner, '/hang');
    await publishEvents(db, url, [anEvent(org)]);
    const attempt: { latency_ms: number; delivery_id: string } = await eventually('the timed-out attempt recorded', async () =>
      db('webhook_delivery_attempts')
        .join('webhook_deliveries as d', 'd.id', 'delivery_id')
        .where('d.endpoint_id', endpoint.id)
        .first('webhook_delivery_attempts.*'),
    );
    expect(attempt).to.include({ error_code: 'timeout', response_status: null });
    expect(attempt.latency_ms).to.be.within(9_900, 12_000);
    const job = await eventually(async () => {
      const row = await jobOf(attempt.delivery_id);
      return row?.state === 'retry' ? row : null;
    });
    expect(job.retry_count).to.equal(0);
    expect((await db('webhook_endpoints').where({ id: endpoint.id }).first('failing_since')).failing_since).to.be.instanceOf(Date);
  });

  it('disables an endpoint failing for 72 hours and e-mails the owners and admins (not members)', async () => {
    const admin = await newMember(db, org, 'admin');
    await newMember(db, org, 'member');
    receiver.on('/down', () => ({ status: 500 }));
    const endpoint = await createEndpoint(owner, '/down');
    // Failing since three days and an hour ago (the injected past: no test waits days).
    await db('webhook_endpoints')
      .where({ id: endpoint.id })
      .update({ failing_since: db.raw(`now() - interval '73 hours'`) });
    await publishEvents(db, url, [anEvent(org)]);
    const [delivery] = await settled(endpoint.id, 1);
    expect(delivery).to.include({ status: 'failed', status_reason: 'the endpoint was disabled', attempts: 1, response_status: 500 });
    // Failed for good: no retry follows (dead-lettered like every job that fails for good).
    await eventually('the delivery job failed for good', async () => (await jobOf(delivery.id))?.state === 'failed');
    const read = await server.request('get', `${endpointsOf(org)}/${endpoint.id}`, { token: owner.token });
    expect(read.body.webhook_endpoint).to.deep.include({ enabled: false, disabled_reason: 'every delivery failed for 72 hours' });
    const mails = await eventually('two e-mails sent', async () => {
      const sent = smtp.received.filter((m) => m.raw.includes(endpoint.id));
      return sent.length === 2 ? sent : null;
    });
    expect(mails.map((m) => m.to[0]).sort()).to.deep.equal([owner.email, admin.email].map((e) => e.toLowerCase()).sort());
    expect(mails[0]!.raw).to.include('disabled');
    // A disabled endpoint gets no new deliveries; enabling it clears the record.
    await publishEvents(db, url, [anEvent(org)]);
    expect(await deliveriesOf(endpoint.id)).to.have.length(1);
    const enabled = await server.request('patch', `${endpointsOf(org)}/${endpoint.id}`, { token: owner.token, body: { enabled: true } });
    expect(enabled.body.webhook_endpoint).to.deep.include({ enabled: true, disabled_reason: null, failing_since: null });
  });

  it('signs with the new and the previous secret for the rotation window, then with the new one only', async () => {
    const endpoint = await createEndpoint(owner, '/rotating');
    const rotated = await server.request('post', `${endpointsOf(org)}/${endpoint.id}/rotate-secret`, { token: owner.token });
    const fresh = rotated.body.secret as string;
    await publishEvents(db, url, [anEvent(org)]);
    await settled(endpoint.id, 1);
    const [during] = receiver.at('/rotating');
    expect(during!.headers['webhook-signature']!.split(' ')).to.have.length(2);
    expect(verify(endpoint.secret, during!)).to.have.property('type', 'member.added');
    expect(verify(fresh, during!)).to.have.property('type', 'member.added');

    await db('webhook_endpoints')
      .where({ id: endpoint.id })
      .update({ previous_secret_expires_at: db.raw(`now() - interval '1 second'`) });
    await publishEvents(db, url, [anEvent(org)]);
    await settled(endpoint.id, 2);
    const after = receiver.at('/rotating')[1]!;
    expect(after.headers['webhook-signature']!.split(' ')).to.have.length(1);
    expect(verify(fresh, after)).to.have.property('type', 'member.added');
    expect(() => verify(endpoint.secret, after)).to.throw();
  });

  it('sends a ping on test, and redelivers a delivery as a new one with the same webhook-id', async () => {
    const endpoint = await createEndpoint(owner, '/ping');
    const ping = await server.request('post', `${endpointsOf(org)}/${endpoint.id}/test`, { token: owner.token });
    expect(ping.status).to.equal(202);
    expect(ping.body.webhook_delivery).to.include({ event_type: 'ping', status: 'pending', attempts: 0, redelivery_of: null });
    const [first] = await settled(endpoint.id, 1);
    const message = verify(endpoint.secret, receiver.at('/ping')[0]!) as { type: string; data: { object: { webhook_endpoint_id: string } } };
    expect(message.type).to.equal('ping');
    expect(message.data.object.webhook_endpoint_id).to.equal(endpoint.id);

    const again = await server.request('post', `${endpointsOf(org)}/${endpoint.id}/deliveries/${first.id}/redeliver`, { token: owner.token });
    expect(again.status).to.equal(202);
    expect(again.body.webhook_delivery).to.include({ redelivery_of: first.id, event_id: first.event_id, status: 'pending' });
    await settled(endpoint.id, 2);
    const requests = receiver.at('/ping');
    expect(requests).to.have.length(2);
    expect(requests[1]!.headers['webhook-id']).to.equal(requests[0]!.headers['webhook-id']);
    expect(verify(endpoint.secret, requests[1]!)).to.deep.equal(verify(endpoint.secret, requests[0]!));
    const listed = await server.request('get', `${endpointsOf(org)}/${endpoint.id}/deliveries`, { token: owner.token, query: { limit: 1 } });
    expect(listed.body.items[0]).to.include({ id: again.body.webhook_delivery.id, status: 'succeeded' });
    const next = await server.request('get', `${endpointsOf(org)}/${endpoint.id}/deliveries`, {
      token: owner.token,
      query: { limit: 1, cursor: listed.body.next_cursor },
    });
    expect(next.body).to.deep.include({ next_cursor: null });
    expect(next.body.items[0].id).to.equal(first.id);
    // A delivery of another endpoint is 404 through this one.
    const otherEndpoint = await createEndpoint(owner, '/ping-other');
    const cross = await server.request('post', `${endpointsOf(org)}/${otherEndpoint.id}/deliveries/${first.id}/redeliver`, { token: owner.token });
    expect(cross.status).to.equal(404);
  });

  it('does not retry a failed ping: the delivery fails at once with the answer', async () => {
    receiver.on('/ping-down', () => ({ status: 502, body: 'bad gateway' }));
    const endpoint = await createEndpoint(owner, '/ping-down');
    await server.request('post', `${endpointsOf(org)}/${endpoint.id}/test`, { token: owner.token });
    const [delivery] = await eventually('the ping failed', async () => {
      const rows = await deliveriesOf(endpoint.id);
      return rows[0]?.status === 'failed' ? rows : null;
    });
    expect(delivery).to.include({ attempts: 1, response_status: 502, response_body: 'bad gateway', status_reason: 'the endpoint answered 502' });
    await eventually('its job failed without a retry', async () => (await jobOf(delivery.id))?.state === 'failed');
  });

  it('checks the URL again at every attempt: a name resolving to loopback and a redirect to loopback are refused', async () => {
    receiver.on('/redirect', () => ({ status: 302, headers: { location: `${receiver.url}/target` } }));
    const dns = await createEndpoint(owner, '/dns');
    const redirect = await createEndpoint(owner, '/redirect');
    // The name changed its address after the endpoint was saved (as DNS may): localhost is not allow-listed, its address is loopback.
    await db('webhook_endpoints')
      .where({ id: dns.id })
      .update({ url: `http://localhost:${receiver.port}/dns` });
    await publishEvents(db, url, [anEvent(org)]);
    const attemptOf = (endpointId: string) =>
      eventually(`an attempt of ${endpointId}`, async () =>
        db('webhook_delivery_attempts as a')
          .join('webhook_deliveries as d', 'd.id', 'a.delivery_id')
          .where('d.endpoint_id', endpointId)
          .first('a.*', 'd.status'),
      );
    const refused = await attemptOf(dns.id);
    expect(refused).to.include({ error_code: 'address_not_allowed', response_status: null, status: 'pending' });
    expect(receiver.at('/dns')).to.have.length(0);
    const redirected = await attemptOf(redirect.id);
    expect(redirected).to.include({ response_status: 302, status: 'pending' });
    expect(receiver.at('/target')).to.have.length(0);
  });

  it('delivers an event about a resource only to endpoints whose creator can read it, and stops when the creator leaves', async () => {
    await server.request('patch', `/organizations/${org}/roles`, {
      token: owner.token,
      body: { key: 'integrations', name: 'Integrations', permissions: ['members.view', 'resources.create', 'webhooks.manage'] },
    });
    const integrator = await newMember(db, org, 'integrations');
    const theirs = await createEndpoint(integrator, '/integrator');
    const owners = await createEndpoint(owner, '/owner');
    const secret = await createAsset(server, owner, org, { title: 'Salaries' });
    const shared = await createAsset(server, owner, org, { title: 'Handbook', visibility: 'workspace' });
    const own = await createAsset(server, integrator, org, { title: 'Mine' });
    const about = (asset: { id: string }) => anEvent(org, 'asset.enriched', { type: 'asset', id: asset.id }, { id: asset.id });
    await publishEvents(db, url, [about(secret), about(shared), about(own)]);
    const integratorDeliveries = await settled(theirs.id, 3);
    await settled(owners.id, 3);
    const byAsset = (rows: { subject_id: string; status: string; status_reason: string | null }[]) =>
      Object.fromEntries(rows.map((row) => [row.subject_id, row.status]));
    expect(byAsset(integratorDeliveries)).to.deep.equal({ [secret.id]: 'skipped', [shared.id]: 'succeeded', [own.id]: 'succeeded' });
    expect(integratorDeliveries.find((row) => row.subject_id === secret.id)!.status_reason).to.equal(
      'the member who created the endpoint cannot read the resource the event is about',
    );
    const seen = receiver.at('/integrator').map((r) => (JSON.parse(r.body) as { data: { object: { id: string } } }).data.object.id);
    expect(seen.sort()).to.deep.equal([shared.id, own.id].sort());
    expect(receiver.at('/owner')).to.have.length(3);

    // The creator leaves: the endpoint stops receiving, even organization-level events; the owner's goes on.
    // The removal itself records `member.removed`, fanned out in its transaction (no event is published by hand).
    const removed = await server.request('delete', `/organizations/${org}/members/${integrator.id}`, { token: owner.token });
    expect(removed.status).to.equal(204);
    const afterLeaving = await settled(theirs.id, 4);
    expect(afterLeaving[3]).to.include({ status: 'skipped', status_reason: 'the member who created the endpoint is no longer in the organization' });
    await settled(owners.id, 4);
    // The endpoint stops for good (no delivery is even made for it any more), and the owners and admins are told.
    const stopped = await server.request('get', `${endpointsOf(org)}/${theirs.id}`, { token: owner.token });
    expect(stopped.body.webhook_endpoint).to.deep.include({
      enabled: false,
      disabled_reason: 'the member who created the endpoint is no longer in the organization',
    });
    const told = await eventually('the owner told', async () => smtp.received.find((m) => m.raw.includes('/integrator')) ?? null);
    expect(told.to).to.deep.equal([owner.email.toLowerCase()]);
    const listed = await server.request('get', `${endpointsOf(org)}/${theirs.id}/deliveries`, { token: owner.token });
    expect(listed.body.items[0]).to.deep.include({ status: 'skipped', status_reason: 'the member who created the endpoint is no longer in the organization' });
    await publishEvents(db, url, [anEvent(org)]);
    // Once the owner's endpoint has the new event, the departed creator's has had its chance and got nothing.
    await settled(owners.id, 5);
    await eventually('the owner received the new event', async () => receiver.at('/owner').length === 5 || null);
    expect(await deliveriesOf(theirs.id)).to.have.length(4);
    expect(receiver.at('/integrator')).to.have.length(2);
    // A skipped delivery gave back the slot its attempt claimed with its first read.
    expect(await db('webhook_endpoint_slots').where({ endpoint_id: theirs.id }).whereNotNull('holder')).to.deep.equal([]);
    const removal = JSON.parse(receiver.at('/owner')[3]!.body) as { type: string; organization_id: string; data: { object: { user_id?: string } } };
    expect(removal).to.deep.include({ type: 'member.removed', organization_id: org });
  });

  // Issue 36: events about the organization itself were sent unchecked (only subjects were checked).
  it('sends an organization event only to an endpoint whose creator holds the permission its type needs, as GET …/events', async () => {
    await server.request('patch', `/organizations/${org}/roles`, {
      token: owner.token,
      body: { key: 'hooks', name: 'Hooks only', permissions: ['webhooks.manage'] },
    });
    const hooker = await newMember(db, org, 'hooks');
    const theirs = await createEndpoint(hooker, '/hooks-only');
    const types = ['member.added', 'invitation.accepted', 'credits.low_balance', 'billing.subscription.updated'] as const;
    await publishEvents(
      db,
      url,
      types.map((type) => anEvent(org, type, null, { email: 'new.member@example.com' })),
    );
    const rows = await settled(theirs.id, 4);
    expect(Object.fromEntries(rows.map((row) => [row.event_type, [row.status, row.status_reason]]))).to.deep.equal({
      'member.added': ['skipped', 'the member who created the endpoint does not hold members.view, which this event needs'],
      'invitation.accepted': ['skipped', 'the member who created the endpoint does not hold invitations.manage, which this event needs'],
      'credits.low_balance': ['skipped', 'the member who created the endpoint does not hold credits.view, which this event needs'],
      'billing.subscription.updated': ['skipped', 'the member who created the endpoint does not hold billing.view, which this event needs'],
    });
    expect(receiver.at('/hooks-only')).to.deep.equal([]);
    // Their own event list agrees: none of them.
    const own = await server.request('get', `/organizations/${org}/events`, { token: hooker.token });
    expect(own.status).to.equal(200);
    expect(own.body.items.filter((event: { type: string }) => (types as readonly string[]).includes(event.type))).to.deep.equal([]);
    // The endpoint itself still works: it is the events that are not theirs to see.
    const read = await server.request('get', `${endpointsOf(org)}/${theirs.id}`, { token: owner.token });
    expect(read.body.webhook_endpoint).to.deep.include({ enabled: true, disabled_reason: null });
  });

  it('checks the creator at each delivery: a demoted admin’s endpoint stops, with its owners told, and nothing more is sent', async () => {
    const admin = await newMember(db, org, 'admin');
    const theirs = await createEndpoint(admin, '/demoted', ['invitation.accepted']);
    await publishEvents(db, url, [anEvent(org, 'invitation.accepted')]);
    expect((await settled(theirs.id, 1))[0]).to.include({ status: 'succeeded' });
    const demoted = await server.request('patch', `/organizations/${org}/members/${admin.id}`, { token: owner.token, body: { role: 'member' } });
    expect(demoted.status, JSON.stringify(demoted.body)).to.equal(200);
    await publishEvents(db, url, [anEvent(org, 'invitation.accepted')]);
    const rows = await settled(theirs.id, 2);
    expect(rows[1]).to.include({ status: 'skipped', status_reason: 'the member who created the endpoint no longer holds webhooks.manage' });
    expect(receiver.at('/demoted')).to.have.length(1);
    const stopped = await server.request('get', `${endpointsOf(org)}/${theirs.id}`, { token: owner.token });
    expect(stopped.body.webhook_endpoint).to.deep.include({
      enabled: false,
      disabled_reason: 'the member who created the endpoint no longer holds webhooks.manage',
    });
    const told = await eventually('the owner told', async () => smtp.received.find((m) => m.raw.includes('/demoted')) ?? null);
    expect(told.to).to.deep.equal([owner.email.toLowerCase()]);
    expect(told.raw).to.include('no longer holds webhooks.manage');
  });

  it('shows the delivery backlog and failing endpoints beside the queues (/ops/webhooks)', async () => {
    receiver.on('/health-down?token=receiver-secret', () => ({ status: 500 }));
    const endpoint = await createEndpoint(owner, '/health-down?token=receiver-secret');
    await publishEvents(db, url, [anEvent(org)]);
    await eventually('the endpoint is failing', async () => (await db('webhook_endpoints').where({ id: endpoint.id }).first('failing_since')).failing_since);
    const mine = await server.request('get', '/ops/webhooks', { token: owner.token, query: { organization_id: org } });
    expect(mine.status).to.equal(200);
    expect(mine.body.backlog.pending).to.equal(1);
    expect(mine.body.backlog.oldest_pending_seconds).to.be.a('number');
    expect(mine.body.failing_endpoints).to.have.length(1);
    expect(mine.body.failing_endpoints[0]).to.deep.include({ endpoint_id: endpoint.id, organization_id: org, host: `127.0.0.1:${receiver.port}`, pending: 1 });
    // The host only: a receiver's token in the URL is not shown to operators.
    expect(JSON.stringify(mine.body)).to.not.include('receiver-secret');
    const operatorView = await server.request('get', '/ops/webhooks', { token: newOperator().token });
    expect(operatorView.status).to.equal(200);
    expect(operatorView.body.failing_endpoints.map((e: { endpoint_id: string }) => e.endpoint_id)).to.include(endpoint.id);
    const plain = await newMember(db, org, 'member');
    expect((await server.request('get', '/ops/webhooks', { token: plain.token, query: { organization_id: org } })).status).to.equal(403);
    const stranger = newUser();
    await createOrganization(server, stranger);
    expect((await server.request('get', '/ops/webhooks', { token: stranger.token, query: { organization_id: org } })).status).to.equal(403);
  });

  it('one slow endpoint holds at most its own slots: the others are delivered meanwhile', async () => {
    let open = 0;
    let mostOpen = 0;
    receiver.on('/slow', () => {
      open++;
      mostOpen = Math.max(mostOpen, open);
      setTimeout(() => open--, 3_000);
      return { delayMs: 3_000 };
    });
    const slow = await createEndpoint(owner, '/slow', ['credits.low_balance']);
    const healthy = await createEndpoint(owner, '/healthy', ['member.added']);
    await publishEvents(
      db,
      url,
      Array.from({ length: 12 }, () => anEvent(org, 'credits.low_balance')),
    );
    await eventually('the slow endpoint is busy', async () => open > 0);
    await publishEvents(
      db,
      url,
      Array.from({ length: 5 }, () => anEvent(org, 'member.added')),
    );
    await settled(healthy.id, 5);
    // Delivered while the slow endpoint still had most of its backlog waiting.
    const slowDone = (await deliveriesOf(slow.id)).filter((row) => row.status !== 'pending').length;
    expect(slowDone).to.be.below(12);
    await settled(slow.id, 12);
    // Exactly the limit at most: an attempt sends only while it holds one of the endpoint's slots.
    expect(mostOpen).to.be.at.most(ENDPOINT_CONCURRENCY);
  });
});
