import { expect } from 'chai';
import { consoleSnapshotJob } from '../../src/operations/jobs.ts';
import { EXACT_COUNT_CAP } from '../../src/operations/job-service.ts';
import { eventually } from '../support/eventually.ts';
import { createOrganization, newMember, newOperator, newUser, type TestUser } from '../support/factories.ts';
import { flaky, flakyJob, idleJob, jobState, newAssetId, show, startOpsStack, type OpsStack } from './support.ts';

/**
 * The console at a million jobs (issue 25), over the API: totals that are counted or say they are
 * estimates, pg-boss's internal queues hidden and never alerting, the origin filter, the caller's own
 * view, the per-organization share of the workers' slots, retry-now, bulk delete and conditional GETs.
 */
describe('job console at scale: counts, internal queues, tenant view, fairness, retry now, live refresh (issue 25)', function () {
  this.timeout(120_000);
  let stack: OpsStack;
  let operator: TestUser;
  let owner: TestUser;
  let admin: TestUser;
  let member: TestUser;
  let otherOwner: TestUser;
  let org: string;
  let otherOrg: string;
  const get = (path: string, token: string, query?: Record<string, string>, headers?: Record<string, string>) =>
    stack.server.request('get', path, { token, ...(query && { query }), ...(headers && { headers }) });
  const post = (path: string, token: string, body: unknown = {}) => stack.server.request('post', path, { token, body });

  before(async () => {
    stack = await startOpsStack({
      METRICS_TOKEN: 'metrics-token-for-the-scale-test',
      OPS_ALERT_NO_WORKER_SECONDS: '1',
      OPS_BULK_BATCH_SIZE: '2',
      OPS_BULK_PAUSE_MS: '0',
      WORKER_CONCURRENCY: '4',
      // The optional hard cap per organization (the default shares by weight, with no cap: test/jobs/fair-share.test.ts).
      JOB_ORGANIZATION_CONCURRENCY: '2',
    });
    operator = newOperator();
    owner = newUser();
    otherOwner = newUser();
    [org, otherOrg] = await Promise.all([createOrganization(stack.server, owner), createOrganization(stack.server, otherOwner)]);
    admin = await newMember(stack.db, org, 'admin');
    member = await newMember(stack.db, org, 'member');
  });
  after(() => stack?.stop());
  beforeEach(() => {
    flaky.failing = false;
  });

  it('totals: counted up to 1,000 (exact), beyond that an estimate that says so, never below what was counted; count=exact counts', async () => {
    const few = await get('/ops/jobs', operator.token, { queue: idleJob.name });
    expect(few.status, show(few)).to.equal(200);
    expect(few.body.total).to.deep.equal({ value: 0, exact: true, at_least: null, basis: 'counted' });

    // More than the cap, through pg-boss's own bulk insert, into a queue nobody works.
    const seeded = EXACT_COUNT_CAP + 500;
    for (let i = 0; i < seeded; i += 2500) {
      const batch = Array.from({ length: Math.min(2500, seeded - i) }, () => ({ payload: { asset_id: newAssetId() }, organizationId: otherOrg }));
      await stack.db.transaction((trx) => stack.queue.enqueueMany(trx, idleJob, batch));
    }
    const many = await get('/ops/jobs', operator.token, { queue: idleJob.name, limit: '5' });
    expect(many.status, show(many)).to.equal(200);
    expect(many.body.items).to.have.length(5);
    expect(many.body.total.exact).to.equal(false);
    expect(many.body.total.at_least).to.equal(EXACT_COUNT_CAP + 1);
    expect(['planner', 'extrapolated']).to.include(many.body.total.basis);
    // The right order of magnitude: never below what was counted, not ten times the truth.
    expect(many.body.total.value).to.be.at.least(EXACT_COUNT_CAP + 1);
    expect(many.body.total.value).to.be.below(seeded * 10);

    const exact = await get('/ops/jobs', operator.token, { queue: idleJob.name, count: 'exact', limit: '1' });
    expect(exact.body.total).to.deep.equal({ value: seeded, exact: true, at_least: null, basis: 'counted' });
    // An organization's admin sees their organization's count: none of these.
    const own = await get('/ops/jobs', admin.token, { organization_id: org, queue: idleJob.name });
    expect(own.body.total).to.deep.equal({ value: 0, exact: true, at_least: null, basis: 'counted' });

    const cleared = await stack.db('pgboss.job').where({ name: idleJob.name }).delete();
    expect(cleared).to.equal(seeded);
  });

  it("pg-boss's internal queues: hidden from queue health unless asked, never alerting (nor in /metrics); cron and internal jobs filterable", async () => {
    // pg-boss's cron sender (no worker of ours serves it: the false "no live worker" alert) and one of its jobs.
    await stack.db.raw(`INSERT INTO pgboss.queue (name, policy, retry_limit, retry_delay, retry_backoff, expire_seconds, retention_seconds, deletion_seconds, partition, table_name)
                        SELECT '__pgboss__send-it', 'standard', 0, 0, false, 900, 86400, 604800, false, 'job_common'
                         WHERE NOT EXISTS (SELECT 1 FROM pgboss.queue WHERE name = '__pgboss__send-it')`);
    const [internal] = await stack.db('pgboss.job').insert({ name: '__pgboss__send-it', data: {}, state: 'completed' }).returning('id');
    const cron = await stack.send(consoleSnapshotJob as never, {} as never, null);
    const work = await stack.send(idleJob, { asset_id: newAssetId() }, otherOrg);
    await new Promise((resolve) => setTimeout(resolve, 1200));

    const queues = await get('/ops/queues', operator.token);
    expect(queues.status, show(queues)).to.equal(200);
    expect(queues.body.items.map((q: { name: string }) => q.name).filter((name: string) => name.startsWith('__pgboss__'))).to.deep.equal([]);
    expect(queues.body.alerts.filter((a: { queue: string }) => a.queue.startsWith('__pgboss__'))).to.deep.equal([]);
    // The idle queue does alert: the alerts work, the internal queue is left out on purpose.
    expect(queues.body.alerts.some((a: { queue: string; kind: string }) => a.queue === idleJob.name && a.kind === 'no_live_worker')).to.equal(true);
    const idle = queues.body.items.find((q: { name: string }) => q.name === idleJob.name);
    expect(idle.internal).to.equal(false);
    // pg-boss's own counts of the whole queue, with when it counted.
    expect(idle.stats).to.have.all.keys('queued', 'deferred', 'active', 'failed', 'total', 'counted_at');

    const withInternal = await get('/ops/queues', operator.token, { internal: 'true' });
    const sendIt = withInternal.body.items.find((q: { name: string }) => q.name === '__pgboss__send-it');
    expect(sendIt, show(withInternal)).to.include({ internal: true, live_workers: 0 });
    expect(sendIt.alerts).to.deep.equal([]);
    expect(withInternal.body.alerts.filter((a: { queue: string }) => a.queue.startsWith('__pgboss__'))).to.deep.equal([]);

    const scrape = await fetch(`${stack.server.url}/metrics`, { headers: { authorization: 'Bearer metrics-token-for-the-scale-test' } });
    const text = await scrape.text();
    expect(text).to.match(new RegExp(`job_queue_alert\\{queue="${idleJob.name.replaceAll('.', '\\.')}",kind="no_live_worker"`));
    expect(text).not.to.match(/job_queue_alert\{queue="__pgboss__/);

    const ids = async (query: Record<string, string>) =>
      ((await get('/ops/jobs', operator.token, { ...query, limit: '100' })).body.items as { id: string; queue: string }[]).map((job) => job.id);
    const byDefault = await ids({});
    expect(byDefault).to.include(work);
    expect(byDefault).not.to.include(cron);
    expect(byDefault).not.to.include(internal.id);
    expect(await ids({ origin: 'cron' }))
      .to.include(cron)
      .and.not.include(work);
    expect(await ids({ origin: 'internal' })).to.deep.equal([internal.id]);
    expect(await ids({ origin: 'all' })).to.include.members([work, cron, internal.id]);
    // Naming the queue finds its jobs whatever their origin.
    expect(await ids({ queue: consoleSnapshotJob.name })).to.include(cron);
    const bad = await get('/ops/jobs', operator.token, { origin: 'everything' });
    expect(bad.status).to.equal(400);
    expect(bad.body.data.issues[0].path).to.deep.equal(['origin']);
  });

  it('GET /ops/me: an operator sees everything; an owner or admin their organizations; a plain member none; never another tenant', async () => {
    const asOperator = await get('/ops/me', operator.token);
    expect(asOperator.status, show(asOperator)).to.equal(200);
    expect(asOperator.body).to.deep.include({ user_id: operator.id, operator: true });
    const asAdmin = await get('/ops/me', admin.token);
    expect(asAdmin.body).to.deep.equal({
      user_id: admin.id,
      operator: false,
      organizations: [{ id: org, name: asAdmin.body.organizations[0].name, role: 'admin' }],
    });
    const asOwner = await get('/ops/me', owner.token);
    expect(asOwner.body.organizations.map((o: { id: string; role: string }) => [o.id, o.role])).to.deep.equal([[org, 'owner']]);
    const asMember = await get('/ops/me', member.token);
    expect(asMember.body).to.deep.equal({ user_id: member.id, operator: false, organizations: [] });
    // The view it leads to: their jobs only; another organization's is 403.
    const theirs = await get('/ops/jobs', admin.token, { organization_id: otherOrg });
    expect(theirs.status).to.equal(403);
  });

  it('fairness: with JOB_ORGANIZATION_CONCURRENCY one organization holds at most that many slots; another still runs; the panel shows it capped', async () => {
    flaky.aborted.length = 0;
    const held: string[] = [];
    for (let i = 0; i < 5; i++) held.push(await stack.send(flakyJob, { asset_id: newAssetId(), hold: true }, org));
    await eventually('two of the organization’s jobs run', async () => {
      const states = await Promise.all(held.map((id) => jobState(stack.db, id)));
      return states.filter((state) => state === 'active').length === 2;
    });
    // A slot is left for everyone else: another organization's job runs at once.
    const other = await stack.send(flakyJob, { asset_id: newAssetId(), hold: true }, otherOrg);
    await eventually('the other organization’s job runs', async () => (await jobState(stack.db, other)) === 'active');
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect((await Promise.all(held.map((id) => jobState(stack.db, id)))).filter((state) => state === 'active')).to.have.length(2);

    const panel = await get('/ops/organizations', operator.token);
    expect(panel.status, show(panel)).to.equal(200);
    expect(panel.body.fairness).to.deep.equal({ mode: 'fixed', share: null, per_worker: null, fixed_limit: 2 });
    const noisy = panel.body.items.find((o: { organization_id: string }) => o.organization_id === org);
    expect(noisy).to.include({ active: 2, queued: 3, concurrency_limit: 2, capped: true });
    expect(noisy.queues.find((q: { queue: string }) => q.queue === flakyJob.name)).to.deep.equal({
      queue: flakyJob.name,
      active: 2,
      queued: 3,
      limit: 2,
      fleet_slots: 4,
      capped: true,
    });
    const quiet = panel.body.items.find((o: { organization_id: string }) => o.organization_id === otherOrg);
    expect(quiet.queues.find((q: { queue: string }) => q.queue === flakyJob.name)).to.include({ active: 1, capped: false });
    // The organization's own admin sees the same about their organization, and only it.
    const own = await get('/ops/organizations', admin.token, { organization_id: org });
    expect(own.body.items.map((o: { organization_id: string }) => o.organization_id)).to.deep.equal([org]);

    for (const id of [...held, other]) {
      const cancelled = await post(`/ops/jobs/${id}/cancel`, operator.token, { reason: 'fairness test over' });
      expect(cancelled.status, show(cancelled)).to.equal(200);
    }
  });

  it('retry now: a job waiting out its backoff runs at once, keeps its attempts, is on record; 409 for a due job or one a pause holds', async () => {
    // A job waiting out its retry backoff, as pg-boss leaves one after a failed attempt: state `retry`, due in an hour.
    const id = await stack.send(flakyJob, { asset_id: newAssetId() }, org, { startAfter: new Date(Date.now() + 3600_000) });
    await stack
      .db('pgboss.job')
      .where({ id })
      .update({ state: 'retry', start_after: stack.db.raw("now() + interval '1 hour'") });
    const waiting = await get(`/ops/jobs/${id}`, admin.token);
    expect(waiting.body.job.state).to.equal('retry');
    expect(new Date(waiting.body.job.start_after).getTime()).to.be.greaterThan(Date.now() + 3000_000);

    const started = await post(`/ops/jobs/${id}/retry-now`, admin.token, { reason: 'the upstream is fixed' });
    expect(started.status, show(started)).to.equal(200);
    expect(started.body.job.id).to.equal(id);
    expect(new Date(started.body.job.start_after).getTime()).to.be.at.most(Date.now() + 1000);
    await eventually('the retried job completed', async () => (await jobState(stack.db, id)) === 'completed');
    const detail = await get(`/ops/jobs/${id}`, admin.token);
    expect(detail.body.job.attempts).to.equal(1);
    expect(detail.body.actions.map((a: { action: string; reason: string }) => [a.action, a.reason])).to.deep.equal([
      ['job.retry_now', 'the upstream is fixed'],
    ]);

    const again = await post(`/ops/jobs/${id}/retry-now`, admin.token, {});
    expect(again.status, show(again)).to.equal(409);
    expect(again.body.message).to.include('only a job waiting for a later start');
    expect(again.body.message).to.include('completed');
    // Another organization's job is not found, as a missing one.
    expect((await post(`/ops/jobs/${id}/retry-now`, otherOwner.token, {})).status).to.equal(404);

    // A delayed job of a paused organization: the pause holds it, retry-now does not sneak it out.
    const delayed = await stack.send(idleJob, { asset_id: newAssetId() }, org, { startAfter: new Date(Date.now() + 3600_000) });
    const pause = await post('/ops/pauses', admin.token, { scope: 'organization', queue: idleJob.name, organization_id: org, reason: 'hold' });
    expect(pause.status, show(pause)).to.equal(201);
    const refused = await post(`/ops/jobs/${delayed}/retry-now`, admin.token, {});
    expect(refused.status, show(refused)).to.equal(409);
    expect(refused.body.message).to.include('pause');
    expect((await post(`/ops/pauses/${pause.body.pause.id}/resume`, admin.token, {})).status).to.equal(200);
    const released = await post(`/ops/jobs/${delayed}/retry-now`, admin.token, {});
    expect(released.status, show(released)).to.equal(200);
    expect(released.body.job.state).to.equal('created');
  });

  it('bulk delete: previewed, snapshotted and worked in batches like the other bulk actions; running jobs are never deleted', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push(await stack.send(idleJob, { asset_id: newAssetId() }, org));
    const filter = { queue: idleJob.name, organization_id: org, state: 'created' };
    const preview = await post('/ops/bulk-actions/preview', admin.token, { action: 'delete', filter });
    expect(preview.status, show(preview)).to.equal(200);
    expect(preview.body.count).to.be.at.least(3);
    const created = await post('/ops/bulk-actions', admin.token, { action: 'delete', filter, reason: 'clean up' });
    expect(created.status, show(created)).to.equal(202);
    const bulk = created.body.bulk_action;
    expect(bulk).to.include({ action: 'delete', state: 'running', total: preview.body.count });
    const finished = await eventually('the bulk delete finished', async () => {
      const res = await get(`/ops/bulk-actions/${bulk.id}`, admin.token);
      return res.body.bulk_action.state === 'completed' && res.body.bulk_action;
    });
    expect(finished).to.include({ done: preview.body.count, skipped: 0 });
    expect(await stack.db('pgboss.job').whereIn('id', ids).count('* as n').first()).to.deep.equal({ n: 0 });
    const bad = await post('/ops/bulk-actions/preview', admin.token, { action: 'delete', filter: { ...filter, state: 'active' } });
    expect(bad.status).to.equal(400);
    expect(bad.body.message).to.include('delete applies to');
  });

  it('live refresh: lists, queue health and workers carry an ETag; If-None-Match answers 304 until something shown changes', async () => {
    for (const [path, query] of [
      ['/ops/queues', { organization_id: org }],
      ['/ops/jobs', { organization_id: org }],
      ['/ops/workers', {}],
    ] as const) {
      const token = path === '/ops/workers' ? operator.token : admin.token;
      const first = await get(path, token, query);
      expect(first.status, show(first)).to.equal(200);
      const etag = first.headers.get('etag');
      expect(etag, path).to.match(/^W\/"[\w-]{22}"$/);
      expect(first.headers.get('cache-control')).to.equal('private, no-cache');
      const same = await get(path, token, query, { 'if-none-match': etag! });
      if (path === '/ops/workers' && same.status === 200) continue; // a heartbeat landed in between: a real change
      expect(same.status, path).to.equal(304);
      expect(same.body || null).to.equal(null);
      if (path === '/ops/workers') continue;
      // A new job of the organization: the next poll gets it.
      await stack.send(idleJob, { asset_id: newAssetId() }, org);
      const changed = await get(path, token, query, { 'if-none-match': etag! });
      expect(changed.status, path).to.equal(200);
      expect(changed.headers.get('etag')).not.to.equal(etag);
    }
  });
});
