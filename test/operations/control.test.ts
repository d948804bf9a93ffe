import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { bulkActionJob, consoleSnapshotJob } from '../../src/operations/jobs.ts';
import { createBoss } from '../../src/jobs/boss.ts';
import { sweepLostWorkers } from '../../src/jobs/worker-registry.ts';
import { createLogger } from '../../src/platform/logger.ts';
import { eventually } from '../support/eventually.ts';
import { createOrganization, newMember, newOperator, newUser, type TestUser } from '../support/factories.ts';
import { testConfig } from '../support/config.ts';
import { flaky, flakyJob, idleJob, jobState, newAssetId, show, startOpsStack, type OpsStack } from './support.ts';

describe('job console: pauses, bulk actions, workers, queues, schedules (issue 12)', function () {
  this.timeout(90_000);
  let stack: OpsStack;
  let operator: TestUser;
  let owner: TestUser;
  let admin: TestUser;
  let otherOwner: TestUser;
  let org: string;
  let otherOrg: string;
  const get = (path: string, token: string, query?: Record<string, string>) => stack.server.request('get', path, { token, ...(query && { query }) });
  const post = (path: string, token: string, body: unknown = {}) => stack.server.request('post', path, { token, body });

  before(async () => {
    stack = await startOpsStack({
      METRICS_TOKEN: 'metrics-token-for-the-console-test',
      OPS_ALERT_BACKLOG_AGE_SECONDS: '1',
      OPS_ALERT_NO_WORKER_SECONDS: '1',
      OPS_BULK_BATCH_SIZE: '2',
      OPS_BULK_PAUSE_MS: '0',
    });
    operator = newOperator();
    owner = newUser();
    otherOwner = newUser();
    [org, otherOrg] = await Promise.all([createOrganization(stack.server, owner), createOrganization(stack.server, otherOwner)]);
    admin = await newMember(stack.db, org, 'admin');
  });
  after(() => stack?.stop());
  beforeEach(() => {
    flaky.failing = false;
  });

  const done = (id: string) => eventually(`job ${id} completed`, async () => (await jobState(stack.db, id)) === 'completed');
  const startAfterOf = async (id: string) => ((await stack.db('pgboss.job').where({ id }).first('start_after')) as { start_after: Date }).start_after;

  it('pausing one organization on a queue defers its queued jobs and holds new ones, others run; resume restores them exactly', async () => {
    const queued = await stack.send(flakyJob, { asset_id: newAssetId() }, org, { startAfter: new Date(Date.now() + 2000) });
    const originalStart = await startAfterOf(queued);
    const paused = await post('/ops/pauses', admin.token, { scope: 'organization', queue: flakyJob.name, organization_id: org, reason: 'tenant import storm' });
    expect(paused.status, show(paused)).to.equal(201);
    expect(paused.body.deferred).to.equal(1);
    expect(paused.body.pause).to.include({ scope: 'organization', queue: flakyJob.name, organization_id: org, open: true, created_by: admin.id });
    expect((await startAfterOf(queued)).getTime()).to.be.greaterThan(Date.now() + 3600_000);
    const twice = await post('/ops/pauses', admin.token, { scope: 'organization', queue: flakyJob.name, organization_id: org, reason: 'again' });
    expect(twice.status, show(twice)).to.equal(409);

    // Enqueued after the pause (only the workers' fetch-time check can hold it), due when their view has surely caught up.
    const held = await stack.send(flakyJob, { asset_id: newAssetId() }, org, { startAfter: new Date(Date.now() + 2000) });
    const free = await stack.send(flakyJob, { asset_id: newAssetId() }, otherOrg);
    await done(free);
    await eventually('the held job was put back by the worker', async () =>
      (await get(`/ops/jobs/${held}`, admin.token)).body.history.some((a: { outcome: string }) => a.outcome === 'deferred'),
    );
    const heldJob = (await get(`/ops/jobs/${held}`, admin.token)).body.job;
    expect(heldJob.state).to.equal('created');
    expect(heldJob.attempts).to.equal(0);

    const listed = await get('/ops/pauses', owner.token, { organization_id: org });
    expect(listed.body.items.map((p: { id: string }) => p.id)).to.deep.equal([paused.body.pause.id]);
    const resumed = await post(`/ops/pauses/${paused.body.pause.id}/resume`, owner.token, { reason: 'storm over' });
    expect(resumed.status, show(resumed)).to.equal(200);
    expect(resumed.body.restored).to.equal(2);
    expect(resumed.body.pause.open).to.equal(false);
    // Due again: back to its own start time, or now if that passed while it was paused.
    const restored = (await startAfterOf(queued)).getTime();
    expect(restored).to.be.at.least(originalStart.getTime());
    expect(restored).to.be.below(Date.now() + 3000);
    expect(await stack.db('job_deferrals').where({ pause_id: paused.body.pause.id }).count('* as n').first()).to.deep.equal({ n: 0 });
    await Promise.all([done(queued), done(held)]);
    const again = await post(`/ops/pauses/${paused.body.pause.id}/resume`, owner.token, {});
    expect(again.status).to.equal(409);
    const audit = await get('/ops/audit-log', owner.token, { organization_id: org });
    expect(audit.body.items.map((a: { action: string }) => a.action).slice(0, 2)).to.deep.equal(['pause.resume', 'pause.create']);
  });

  it('a whole-queue pause is for operators; expired pauses no longer hold; bad scopes are 400 naming the field', async () => {
    const refused = await post('/ops/pauses', admin.token, { scope: 'queue', queue: flakyJob.name, organization_id: org, reason: 'no' });
    expect(refused.status, show(refused)).to.equal(403);
    const missingQueue = await post('/ops/pauses', operator.token, { scope: 'queue', reason: 'x' });
    expect(missingQueue.status).to.equal(400);
    expect(missingQueue.body.data.issues[0].path).to.deep.equal(['queue']);
    const unknownQueue = await post('/ops/pauses', operator.token, { scope: 'queue', queue: 'no.such.v1', reason: 'x' });
    expect(unknownQueue.status).to.equal(400);
    const past = await post('/ops/pauses', operator.token, { scope: 'queue', queue: flakyJob.name, reason: 'x', expires_at: '2020-01-01T00:00:00Z' });
    expect(past.status).to.equal(400);
    expect(past.body.data.issues[0].path).to.deep.equal(['expires_at']);

    // A job queued (due in a moment) when the pause is written is pushed back to the pause's expiry, then runs by itself.
    const id = await stack.send(flakyJob, { asset_id: newAssetId() }, otherOrg, { startAfter: new Date(Date.now() + 1000) });
    const expiresAt = new Date(Date.now() + 3000).toISOString();
    const paused = await post('/ops/pauses', operator.token, { scope: 'queue', queue: flakyJob.name, reason: 'deploy window', expires_at: expiresAt });
    expect(paused.status, show(paused)).to.equal(201);
    expect(paused.body.deferred).to.equal(1);
    expect((await startAfterOf(id)).toISOString()).to.equal(expiresAt);
    expect(await jobState(stack.db, id)).to.equal('created');
    await done(id);
    expect((await stack.db('pgboss.job').where({ id }).first('started_on')).started_on.getTime()).to.be.at.least(new Date(expiresAt).getTime());
  });

  it('a paused platform schedule skips its cron jobs; trigger-now still runs it', async () => {
    const schedules = await get('/ops/schedules', operator.token);
    expect(schedules.status, show(schedules)).to.equal(200);
    const snapshot = schedules.body.items.find((s: { key: string }) => s.key === `cron:${consoleSnapshotJob.name}`);
    expect(snapshot).to.include({ kind: 'platform', cron: '* * * * *', timezone: 'UTC', paused: null });
    expect(new Date(snapshot.next_run_at).getTime()).to.be.within(Date.now(), Date.now() + 61_000);
    expect((await get('/ops/schedules', admin.token, { organization_id: org })).body.items).to.deep.equal([]);

    const paused = await post('/ops/pauses', operator.token, { scope: 'schedule', schedule: `cron:${consoleSnapshotJob.name}`, reason: 'maintenance' });
    expect(paused.status, show(paused)).to.equal(201);
    // A cron run (no operator mark) is completed as skipped…
    const boss = createBoss(stack.url, 'web');
    await boss.start();
    const cronRun = (await boss.send(consoleSnapshotJob.name, {}))!;
    await boss.stop({ graceful: false, close: true });
    await done(cronRun);
    expect(((await stack.db('pgboss.job').where({ id: cronRun }).first('output')) as { output: unknown }).output).to.deep.equal({
      skipped: 'the schedule is paused',
    });
    // …while trigger-now runs it and computes the throughput snapshot.
    await stack.send(flakyJob, { asset_id: newAssetId() }, org).then(done);
    const triggered = await post(`/ops/schedules/${encodeURIComponent(`cron:${consoleSnapshotJob.name}`)}/trigger`, operator.token);
    expect(triggered.status, show(triggered)).to.equal(202);
    await done(triggered.body.job_id);
    expect(((await stack.db('pgboss.job').where({ id: triggered.body.job_id }).first('output')) as { output: unknown }).output).to.equal(null);
    const rows = await stack.db('queue_throughput').where({ queue: flakyJob.name, organization_id: org });
    expect(rows.reduce((sum: number, r: { completed: number }) => sum + r.completed, 0)).to.be.at.least(1);
    expect((await post(`/ops/pauses/${paused.body.pause.id}/resume`, operator.token)).status).to.equal(200);
    expect((await post(`/ops/schedules/${encodeURIComponent(`cron:${consoleSnapshotJob.name}`)}/trigger`, admin.token)).status).to.equal(404);
    expect((await post('/ops/schedules/cron:no.such.v1/trigger', operator.token)).status).to.equal(404);
    // A malformed task id is the parameter's 400 (never a database cast error); a well-formed unknown one is 404.
    const malformed = await post(`/ops/schedules/${encodeURIComponent(`task:${'0'.repeat(36)}`)}/trigger`, operator.token);
    expect(malformed.status, show(malformed)).to.equal(400);
    expect(malformed.body.code).to.equal('validation_failed');
    expect(malformed.body.data.issues.map((issue: { path: string[] }) => issue.path)).to.deep.equal([['schedule_key']]);
    expect((await post(`/ops/schedules/${encodeURIComponent(`task:${randomUUID()}`)}/trigger`, operator.token)).status).to.equal(404);
  });

  it('bulk retry: preview, a durable snapshot worked in batches, a job gone meanwhile is skipped with its reason; abort stops one', async () => {
    flaky.failing = true;
    const since = new Date().toISOString();
    const failed: string[] = [];
    for (let i = 0; i < 5; i++) failed.push(await stack.send(flakyJob, { asset_id: newAssetId() }, org));
    for (const id of failed) await eventually(`job ${id} failed`, async () => (await jobState(stack.db, id)) === 'failed');
    const filter = { queue: flakyJob.name, state: 'failed', organization_id: org, from: since };
    const preview = await post('/ops/bulk-actions/preview', admin.token, { action: 'retry', filter });
    expect(preview.status, show(preview)).to.equal(200);
    expect(preview.body).to.include({ action: 'retry', count: 5, limit: 100_000 });
    expect(preview.body.by_queue).to.deep.equal([{ queue: flakyJob.name, count: 5 }]);
    expect(preview.body.sample).to.have.length(5);
    const wrongState = await post('/ops/bulk-actions/preview', admin.token, { action: 'retry', filter: { ...filter, state: 'active' } });
    expect(wrongState.status).to.equal(400);
    expect(wrongState.body.data.issues[0].path).to.deep.equal(['filter', 'state']);

    // Hold the bulk-action queue so a job can disappear between the snapshot and its batch.
    const hold = await post('/ops/pauses', operator.token, { scope: 'queue', queue: bulkActionJob.name, reason: 'test: hold bulk actions' });
    flaky.failing = false;
    const created = await post('/ops/bulk-actions', admin.token, { action: 'retry', filter, reason: 'upstream fixed' });
    expect(created.status, show(created)).to.equal(202);
    const bulk = created.body.bulk_action;
    expect(bulk).to.include({ action: 'retry', state: 'running', total: 5, done: 0, skipped: 0, organization_id: org, created_by: admin.id });
    await stack.server.request('delete', `/ops/jobs/${failed[0]}`, { token: admin.token });
    await post(`/ops/pauses/${hold.body.pause.id}/resume`, operator.token);
    const finished = await eventually('the bulk action finished', async () => {
      const res = await get(`/ops/bulk-actions/${bulk.id}`, admin.token);
      return res.body.bulk_action.state === 'completed' && res.body.bulk_action;
    });
    expect(finished).to.include({ total: 5, done: 4, skipped: 1 });
    expect(finished.skipped_reasons).to.deep.equal([{ reason: 'the job no longer exists', count: 1 }]);
    await Promise.all(failed.slice(1).map(done));
    expect((await get(`/ops/bulk-actions/${bulk.id}`, otherOwner.token)).status).to.equal(404);
    const audit = await get('/ops/audit-log', owner.token, { organization_id: org, job_id: failed[1]! });
    expect(audit.body.items.map((a: { action: string; bulk_action_id: string }) => [a.action, a.bulk_action_id])).to.deep.equal([['bulk.retry', bulk.id]]);

    // Abort: held again, created, aborted before its first batch — nothing is retried.
    flaky.failing = true;
    const another = await stack.send(flakyJob, { asset_id: newAssetId() }, org);
    await eventually('failed', async () => (await jobState(stack.db, another)) === 'failed');
    const hold2 = await post('/ops/pauses', operator.token, { scope: 'queue', queue: bulkActionJob.name, reason: 'test: hold bulk actions' });
    const second = await post('/ops/bulk-actions', operator.token, { action: 'retry', filter: { queue: flakyJob.name, state: 'failed' }, reason: 'try again' });
    expect(second.status, show(second)).to.equal(202);
    const aborted = await post(`/ops/bulk-actions/${second.body.bulk_action.id}/abort`, operator.token, { reason: 'wrong filter' });
    expect(aborted.status, show(aborted)).to.equal(200);
    expect(aborted.body.bulk_action.abort_requested_at).to.be.a('string');
    await post(`/ops/pauses/${hold2.body.pause.id}/resume`, operator.token);
    await eventually(
      'aborted',
      async () => (await get(`/ops/bulk-actions/${second.body.bulk_action.id}`, operator.token)).body.bulk_action.state === 'aborted',
    );
    expect(await jobState(stack.db, another)).to.equal('failed');
    const none = await post('/ops/bulk-actions', admin.token, { action: 'cancel', filter: { ...filter, state: 'created', queue: 'no.such.v1' }, reason: 'x' });
    expect(none.status).to.equal(400);
    expect(none.body.data.issues[0].path).to.deep.equal(['filter']);
  });

  it('workers: the live worker with its queues; a worker that stops heartbeating is lost and the attempt it held is retried', async () => {
    const workers = await get('/ops/workers', operator.token);
    expect(workers.status, show(workers)).to.equal(200);
    const live = workers.body.items.find((w: { id: string }) => w.id === stack.worker.id);
    expect(live).to.include({ status: 'live', pid: process.pid, concurrency: 4 });
    expect(live.queues).to.include(flakyJob.name);
    expect((await get('/ops/workers', owner.token, { organization_id: org })).status).to.equal(400);
    expect((await get('/ops/workers', owner.token)).status).to.equal(403);

    // A job claimed by a worker that then died: fetched here, held by a registry row whose heartbeat stopped.
    const boss = createBoss(stack.url, 'web');
    await boss.start();
    try {
      const id = await stack.send(idleJob, { asset_id: newAssetId() }, org);
      const [claimed] = await boss.fetch(idleJob.name);
      expect(claimed!.id).to.equal(id);
      const ghost = crypto.randomUUID();
      await stack.db('job_workers').insert({
        id: ghost,
        host: 'ghost-host',
        pid: 1,
        version: 'test',
        queues: [idleJob.name],
        concurrency: 1,
        in_flight: JSON.stringify([{ job_id: id, queue: idleJob.name, attempt: 0, organization_id: org, started_at: new Date().toISOString() }]),
        last_heartbeat_at: stack.db.raw(`now() - interval '5 minutes'`),
      });
      const log = createLogger(testConfig(), 'test');
      expect(await sweepLostWorkers(stack.db, boss, log, 30)).to.equal(1);
      expect(await sweepLostWorkers(stack.db, boss, log, 30)).to.equal(0);
      expect(['retry', 'created']).to.include(await jobState(stack.db, id));
      const detail = await get(`/ops/jobs/${id}`, operator.token);
      expect(detail.body.history.map((a: { outcome: string; worker_id: string }) => [a.outcome, a.worker_id])).to.deep.equal([['lost', ghost]]);
      const all = await get('/ops/workers', operator.token, { include_stopped: 'true' });
      expect(all.body.items.find((w: { id: string }) => w.id === ghost)).to.include({ status: 'lost', jobs_in_flight: 1 });
    } finally {
      await boss.stop({ graceful: false, close: true });
    }
  });

  it('queues: counts by state, oldest ready age, alerts for backlog age and no live worker; the tenant panel shows the noisiest organization', async () => {
    for (let i = 0; i < 3; i++) await stack.send(idleJob, { asset_id: newAssetId() }, otherOrg);
    await new Promise((resolve) => setTimeout(resolve, 1200));
    const queues = await get('/ops/queues', operator.token, { hours: '2' });
    expect(queues.status, show(queues)).to.equal(200);
    const idle = queues.body.items.find((q: { name: string }) => q.name === idleJob.name);
    expect(idle.counts.created).to.be.at.least(3);
    expect(idle.oldest_ready_seconds).to.be.at.least(1);
    expect(idle.live_workers).to.equal(0);
    expect(idle.alerts.map((a: { kind: string }) => a.kind)).to.deep.equal(['backlog_age', 'no_live_worker']);
    expect(queues.body.alerts.filter((a: { queue: string }) => a.queue === idleJob.name)).to.have.length(2);
    const flakyQueue = queues.body.items.find((q: { name: string }) => q.name === flakyJob.name);
    expect(flakyQueue.live_workers).to.equal(1);
    expect(flakyQueue.alerts.map((a: { kind: string }) => a.kind)).to.not.include('no_live_worker');
    expect(queues.body.items.some((q: { name: string }) => q.name.endsWith('.dead'))).to.equal(false);

    // The same alerts in /metrics.
    const scrape = await fetch(`${stack.server.url}/metrics`, { headers: { authorization: 'Bearer metrics-token-for-the-console-test' } });
    const text = await scrape.text();
    expect(text).to.match(new RegExp(`job_queue_alert\\{queue="${idleJob.name.replaceAll('.', '\\.')}",kind="backlog_age",process="web"\\} \\d+`));
    expect(text).to.match(new RegExp(`job_queue_alert\\{queue="${idleJob.name.replaceAll('.', '\\.')}",kind="no_live_worker",process="web"\\}`));
    expect(text).to.include('job_queue_alert_threshold{kind="backlog_age",process="web"} 1');

    const mine = await get('/ops/queues', admin.token, { organization_id: org });
    expect(mine.body.items.find((q: { name: string }) => q.name === idleJob.name).counts.created).to.equal(0);

    const load = await get('/ops/organizations', operator.token);
    expect(load.status, show(load)).to.equal(200);
    const other = load.body.items.find((o: { organization_id: string }) => o.organization_id === otherOrg);
    // Nobody serves the idle queue: no limit to speak of (the fairness panel's own test: console-scale.test.ts).
    expect(other).to.include({ concurrency_limit: null, capped: false });
    expect(other.queued).to.be.at.least(3);
    expect(other.queues.find((q: { queue: string }) => q.queue === idleJob.name).queued).to.be.at.least(3);
    const own = await get('/ops/organizations', admin.token, { organization_id: org });
    expect(own.body.items.every((o: { organization_id: string }) => o.organization_id === org)).to.equal(true);
  });
});
