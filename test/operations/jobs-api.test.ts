import { expect } from 'chai';
import { balanceAlertEmailJob } from '../../src/credits/jobs.ts';
import { withinTimeout } from '../../src/operations/job-rows.ts';
import { isAppError } from '../../src/core/errors.ts';
import { eventually } from '../support/eventually.ts';
import { addMember, createOrganization, newMember, newOperator, newUser, type TestUser } from '../support/factories.ts';
import { flaky, flakyJob, jobState, newAssetId, show, startOpsStack, type OpsStack } from './support.ts';

describe('job console: jobs, history, commands, access (issue 12)', function () {
  this.timeout(60_000);
  let stack: OpsStack;
  let operator: TestUser;
  let owner: TestUser;
  let admin: TestUser;
  let member: TestUser;
  let otherOwner: TestUser;
  let org: string;
  let otherOrg: string;
  const get = (path: string, token: string, query?: Record<string, string>) => stack.server.request('get', path, { token, ...(query && { query }) });
  const post = (path: string, token: string, body: unknown = {}, headers?: Record<string, string>) =>
    stack.server.request('post', path, { token, body, ...(headers && { headers }) });

  before(async () => {
    stack = await startOpsStack();
    operator = newOperator();
    owner = newUser();
    otherOwner = newUser();
    [org, otherOrg] = await Promise.all([createOrganization(stack.server, owner), createOrganization(stack.server, otherOwner)]);
    admin = await newMember(stack.db, org, 'admin');
    member = await newMember(stack.db, org, 'member');
  });
  after(() => stack?.stop());
  beforeEach(() => {
    flaky.failing = true;
  });

  async function failedJob(organizationId: string): Promise<string> {
    const id = await stack.send(flakyJob, { asset_id: newAssetId() }, organizationId);
    await eventually(`job ${id} failed`, async () => (await jobState(stack.db, id)) === 'failed');
    return id;
  }

  it('records the organization and the enqueuing request on every job; lookups find it by request id and by resource id', async () => {
    const requestId = `req-${newAssetId()}`;
    const invited = await stack.server.request('post', `/organizations/${org}/invitations`, {
      token: owner.token,
      body: { email: `invitee-${newAssetId().slice(0, 8)}@example.test`, role: 'member' },
      headers: { 'x-request-id': requestId },
    });
    expect(invited.status, show(invited)).to.equal(201);
    const invitationId = invited.body.invitation.id as string;

    const byRequest = await get(`/ops/lookups/requests/${requestId}`, operator.token);
    expect(byRequest.status, show(byRequest)).to.equal(200);
    expect(byRequest.body.items).to.have.length(1);
    const [job] = byRequest.body.items;
    expect(job).to.include({ queue: 'invitations.email.v1', organization_id: org, request_id: requestId });
    expect(job.payload).to.deep.equal({ invitation_id: invitationId });

    const byResource = await get(`/ops/lookups/resources/${invitationId}`, admin.token, { organization_id: org });
    expect(byResource.status, show(byResource)).to.equal(200);
    expect(byResource.body.items.map((j: { id: string }) => j.id)).to.deep.equal([job.id]);
    // The other organization's admin, naming their own organization, finds nothing of it.
    const elsewhere = await get(`/ops/lookups/resources/${invitationId}`, otherOwner.token, { organization_id: otherOrg });
    expect(elsewhere.body.items).to.deep.equal([]);
  });

  it('operators see every organization; owners and admins only their own, by naming it; members and outsiders are refused', async () => {
    const [mine, theirs] = await Promise.all([failedJob(org), failedJob(otherOrg)]);
    const all = await get('/ops/jobs', operator.token, { queue: flakyJob.name, state: 'failed', count: 'exact' });
    expect(all.status, show(all)).to.equal(200);
    const ids = all.body.items.map((j: { id: string }) => j.id);
    expect(ids).to.include.members([mine, theirs]);
    expect(all.body.total).to.deep.equal({ value: ids.length, exact: true, at_least: null, basis: 'counted' });

    const own = await get('/ops/jobs', admin.token, { organization_id: org, queue: flakyJob.name });
    expect(own.status, show(own)).to.equal(200);
    expect(own.body.items.every((j: { organization_id: string }) => j.organization_id === org)).to.equal(true);
    expect(own.body.items.map((j: { id: string }) => j.id))
      .to.include(mine)
      .and.not.include(theirs);

    for (const [who, token, query] of [
      ['an admin without organization_id', admin.token, {}],
      ['an admin naming another organization', admin.token, { organization_id: otherOrg }],
      ['a member (no jobs.manage)', member.token, { organization_id: org }],
    ] as const) {
      const res = await get('/ops/jobs', token, query);
      expect(res.status, `${who}: ${show(res)}`).to.equal(403);
      expect(res.body.code).to.equal('forbidden');
    }
    // One job of another organization: 404 exactly like a missing one.
    const foreign = await get(`/ops/jobs/${theirs}`, admin.token);
    const missing = await get(`/ops/jobs/${newAssetId()}`, admin.token);
    expect(foreign.status).to.equal(404);
    expect(foreign.body).to.deep.equal(missing.body);
    expect((await get(`/ops/jobs/${theirs}`, operator.token)).status).to.equal(200);
    expect((await post(`/ops/jobs/${theirs}/retry`, admin.token)).status).to.equal(404);
    expect(await jobState(stack.db, theirs)).to.equal('failed');
  });

  it('a failed job: its attempt history, timeline and output without stack; retried with a reason, it succeeds; the audit log has who, role, reason and request id', async () => {
    const id = await failedJob(org);
    const failed = await get(`/ops/jobs/${id}`, admin.token);
    expect(failed.status, show(failed)).to.equal(200);
    expect(failed.body.job).to.include({ id, state: 'failed', attempts: 1, organization_id: org });
    expect(JSON.stringify(failed.body.job.output)).to.include('flaky failure').and.not.include('stack');
    // Written when it began, completed at its end (a moment later).
    const ended = (history: { outcome: string }[]) => history.every((a) => a.outcome !== 'running');
    await eventually('the attempt is in the history, ended', async () => {
      const { history } = (await get(`/ops/jobs/${id}`, admin.token)).body;
      return history.length === 1 && ended(history);
    });
    const [attempt] = (await get(`/ops/jobs/${id}`, admin.token)).body.history;
    expect(attempt).to.include({ attempt: 0, outcome: 'failed', worker_id: stack.worker.id });
    expect(attempt.error.message).to.match(/^flaky failure for /);
    expect(attempt.duration_ms).to.be.a('number').at.least(0);

    flaky.failing = false;
    const requestId = `retry-${newAssetId()}`;
    const retried = await post(`/ops/jobs/${id}/retry`, admin.token, { reason: 'the upstream is fixed' }, { 'x-request-id': requestId });
    expect(retried.status, show(retried)).to.equal(200);
    expect(['retry', 'active', 'completed']).to.include(retried.body.job.state);
    await eventually(`job ${id} completed`, async () => (await jobState(stack.db, id)) === 'completed');
    // Retrying a completed job is refused, and recorded nowhere.
    const again = await post(`/ops/jobs/${id}/retry`, admin.token, {});
    expect(again.status, show(again)).to.equal(409);

    await eventually('both attempts are in the history, ended', async () => {
      const { history } = (await get(`/ops/jobs/${id}`, admin.token)).body;
      return history.length === 2 && ended(history);
    });
    const detail = (await get(`/ops/jobs/${id}`, admin.token)).body;
    expect(detail.history.map((a: { outcome: string }) => a.outcome)).to.deep.equal(['failed', 'completed']);
    expect(detail.timeline.map((e: { event: string }) => e.event)).to.deep.equal([
      'created',
      'attempt_started',
      'attempt_ended',
      'operator_action',
      'attempt_started',
      'attempt_ended',
      'completed',
    ]);
    expect(detail.actions).to.have.length(1);
    expect(detail.actions[0]).to.include({
      actor_id: admin.id,
      actor_role: 'admin',
      organization_id: org,
      action: 'job.retry',
      count: 1,
      reason: 'the upstream is fixed',
      request_id: requestId,
    });
    expect(detail.actions[0].job_ids).to.deep.equal([id]);
    const audit = await get('/ops/audit-log', owner.token, { organization_id: org, job_id: id });
    expect(audit.body.items.map((a: { id: string }) => a.id)).to.deep.equal([detail.actions[0].id]);
  });

  it('cancel: a running job’s abort signal fires at once; a queued one is cancelled; then delete; a finished job cannot be cancelled', async () => {
    const running = await stack.send(flakyJob, { asset_id: newAssetId(), hold: true }, org);
    await eventually(`job ${running} running`, async () => (await jobState(stack.db, running)) === 'active');
    const cancelled = await post(`/ops/jobs/${running}/cancel`, operator.token, { reason: 'stuck' });
    expect(cancelled.status, show(cancelled)).to.equal(200);
    expect(cancelled.body.job.state).to.equal('cancelled');
    // The queue has no heartbeat and a 15-minute expiry: only the console's NOTIFY can abort the handler this soon.
    await eventually('the handler saw its abort signal', async () => flaky.aborted.includes(running));
    await eventually('the cancelled attempt is in the history', async () =>
      (await get(`/ops/jobs/${running}`, operator.token)).body.history.some((a: { outcome: string }) => a.outcome === 'cancelled'),
    );

    const later = await stack.send(flakyJob, { asset_id: newAssetId() }, org, { startAfter: new Date(Date.now() + 3600_000) });
    expect((await post(`/ops/jobs/${later}/cancel`, admin.token)).body.job.state).to.equal('cancelled');
    const twice = await post(`/ops/jobs/${later}/cancel`, admin.token);
    expect(twice.status, show(twice)).to.equal(409);
    expect(twice.body.message).to.include('it is cancelled');
    const deleted = await stack.server.request('delete', `/ops/jobs/${later}`, { token: admin.token, query: { reason: 'cleanup' } });
    expect(deleted.status, show(deleted)).to.equal(204);
    expect(await jobState(stack.db, later)).to.equal(undefined);
    expect((await get(`/ops/jobs/${later}`, admin.token)).status).to.equal(404);
    const log = await get('/ops/audit-log', operator.token, { job_id: later });
    expect(log.body.items.map((a: { action: string; reason: string | null }) => [a.action, a.reason])).to.deep.equal([
      ['job.delete', 'cleanup'],
      ['job.cancel', null],
    ]);
  });

  it('sensitive payload fields are redacted; only an operator may reveal them, with a reason, and the reveal is audited', async () => {
    const id = await stack.db.transaction((trx) =>
      stack.queue.enqueue(
        trx,
        balanceAlertEmailJob,
        { organization_id: org, to: 'cfo@example.test', subject: 'Low balance', text: 'Buy credits', idempotency_key: `k-${newAssetId()}` },
        { organizationId: org, startAfter: new Date(Date.now() + 3600_000) },
      ),
    );
    const listed = await get('/ops/jobs', admin.token, { organization_id: org, queue: balanceAlertEmailJob.name });
    const job = listed.body.items.find((j: { id: string }) => j.id === id);
    expect(job.payload).to.deep.include({ organization_id: org, to: '[redacted]', subject: '[redacted]', text: '[redacted]' });
    expect(job.redacted).to.deep.equal(['to', 'subject', 'text']);
    expect(JSON.stringify(listed.body)).not.to.include('cfo@example.test');

    expect((await post(`/ops/jobs/${id}/reveal`, admin.token, { reason: 'support ticket 42' })).status).to.equal(403);
    const noReason = await post(`/ops/jobs/${id}/reveal`, operator.token, {});
    expect(noReason.status).to.equal(400);
    expect(noReason.body.data.issues[0].path).to.deep.equal(['reason']);
    const revealed = await post(`/ops/jobs/${id}/reveal`, operator.token, { reason: 'support ticket 42' });
    expect(revealed.status, show(revealed)).to.equal(200);
    expect(revealed.body.payload.to).to.equal('cfo@example.test');
    const audit = await get('/ops/audit-log', owner.token, { organization_id: org, action: 'job.reveal' });
    expect(audit.body.items).to.have.length(1);
    expect(audit.body.items[0]).to.include({ actor_id: operator.id, actor_role: 'operator', reason: 'support ticket 42', count: 1 });
    expect(audit.body.items[0].target.fields).to.deep.equal(['to', 'subject', 'text']);
  });

  it('lists keep a bounded time window and page by keyset; bad windows are 400 naming the field; a small total is counted, not estimated', async () => {
    const ids = [await failedJob(org), await failedJob(org), await failedJob(org)];
    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await get('/ops/jobs', admin.token, { organization_id: org, queue: flakyJob.name, state: 'failed', limit: '1', ...(cursor && { cursor }) });
      expect(page.status, show(page)).to.equal(200);
      // Up to 1,000 matching jobs are counted (console-scale.test.ts: the estimate beyond).
      expect(page.body.total).to.include({ exact: true, basis: 'counted' });
      seen.push(...page.body.items.map((j: { id: string }) => j.id));
      cursor = page.body.next_cursor ?? undefined;
    } while (cursor);
    expect(seen).to.include.members(ids);
    expect(new Set(seen).size).to.equal(seen.length);

    const wide = await get('/ops/jobs', operator.token, { from: '2026-01-01T00:00:00Z', to: '2026-03-01T00:00:00Z' });
    expect(wide.status).to.equal(400);
    expect(wide.body.data.issues[0].path).to.deep.equal(['from']);
    expect(wide.body.message).to.include('31 days');
    const old = await get('/ops/jobs', operator.token, { from: '2020-01-01T00:00:00Z', to: '2020-01-02T00:00:00Z', queue: flakyJob.name });
    expect(old.body.items).to.deep.equal([]);
    expect(old.body.window).to.deep.equal({ from: '2020-01-01T00:00:00.000Z', to: '2020-01-02T00:00:00.000Z' });
  });

  it('a console query past the statement timeout answers 503 naming what to narrow', async () => {
    const error = await withinTimeout(stack.db, 100, (trx) => trx.raw('SELECT pg_sleep(2)')).catch((e: unknown) => e);
    expect(isAppError(error, 'unavailable'), String(error)).to.equal(true);
    expect((error as Error).message).to.include('narrow the time window');
  });

  it('the audit log is append-only, even for the application’s own connection', async () => {
    await failedJob(org).then((id) => post(`/ops/jobs/${id}/retry`, operator.token, { reason: 'append-only probe' }));
    const update = await stack
      .db('operator_actions')
      .update({ reason: 'rewritten' })
      .catch((e: Error) => e);
    expect(String(update)).to.include('append-only');
    const remove = await stack
      .db('operator_actions')
      .delete()
      .catch((e: Error) => e);
    expect(String(remove)).to.include('append-only');
    expect(await stack.db('operator_actions').where({ reason: 'append-only probe' }).count('* as n').first()).to.deep.equal({ n: 1 });
  });

  it('owners can give jobs.manage to a custom role', async () => {
    const lead = newUser();
    await stack.db('organization_roles').insert({ organization_id: org, key: 'ops_lead', name: 'Ops lead', permissions: ['jobs.manage'] });
    await addMember(stack.db, org, lead, 'ops_lead');
    const res = await get('/ops/jobs', lead.token, { organization_id: org });
    expect(res.status, show(res)).to.equal(200);
  });
});
