import type { ServerResponse } from 'node:http';
import { expect } from 'chai';
import { assetImportJob } from '../../src/assets/jobs.ts';
import { chatRunJob } from '../../src/conversations/jobs.ts';
import { reconcileCredits } from '../../src/credits/reconcile.ts';
import { generationJob } from '../../src/generations/jobs.ts';
import { meteredCallJob } from '../../src/metering/index.ts';
import type { JobDefinition } from '../../src/jobs/define.ts';
import { eventually } from '../support/eventually.ts';
import { createConversation, createOrganization, newUser, type TestUser } from '../support/factories.ts';
import { startUpstream, type FakeUpstream } from '../support/upstream.ts';
import { show, startOpsStack, type OpsStack } from '../operations/support.ts';

/**
 * The runtime owns cancellation (issue 18): an operator's cancel from the job console ends the
 * job's resource in the same transaction — the record terminal, its hold released or what it used
 * captured — and the running handler is told at commit and stops (a worker in process, real HTTP).
 */
describe('cancel from the job console settles the resource with its job', function () {
  this.timeout(90_000);
  let stack: OpsStack;
  let upstream: FakeUpstream;
  let owner: TestUser;
  let org: string;
  const hanging: ServerResponse[] = [];
  let closed = 0;
  let socialClosed = 0;
  let socialHeld = 0;

  /** What /flip.txt serves: first a type that is refused for good, then a text file. */
  let flipped = false;

  before(async () => {
    upstream = await startUpstream({
      '/slow.txt': (_req, res) => {
        hanging.push(res);
        res.on('close', () => closed++);
      },
      '/v1/social/net2_profile': (_req, res) => {
        // A social read that never answers: the console cancels it.
        hanging.push(res);
        socialHeld++;
        res.on('close', () => socialClosed++);
      },
      '/flip.txt': (_req, res) => {
        res.writeHead(200, { 'content-type': flipped ? 'text/plain' : 'application/x-msdownload' });
        res.end('hello from the flip side');
      },
    });
    stack = await startOpsStack({
      CHAT_SANDBOX_DELAY_MS: '150',
      GENERATION_SANDBOX_DELAY_MS: '60000',
      OUTBOUND_ALLOWLIST: `127.0.0.1:${upstream.port}`,
      SOCIAL_API_URL: upstream.url,
      SOCIAL_API_KEY: 'sk-social-test',
    });
    owner = newUser();
    org = await createOrganization(stack.server, owner);
  });
  after(async () => {
    for (const res of hanging) res.destroy();
    await stack?.stop();
    await upstream?.close();
  });

  const post = (path: string, body: unknown = {}) => stack.server.request('post', path, { token: owner.token, body });
  const jobOf = async (job: JobDefinition, field: string, value: string) =>
    (await stack.db('pgboss.job').where({ name: job.name }).whereRaw('data->>? = ?', [field, value]).first('id', 'state')) as { id: string; state: string };
  const endsOf = (jobId: string) => stack.db('job_ends').where({ job_id: jobId }).select('end', 'reason');
  /** The console's cancel (an owner has jobs.manage for their organization's jobs), answered after the settling transaction committed. */
  const cancelFromConsole = async (jobId: string) => {
    const res = await post(`/ops/jobs/${jobId}/cancel`, { reason: 'stuck at the provider' });
    expect(res.status, show(res)).to.equal(200);
    expect(res.body.job.state).to.equal('cancelled');
  };
  const operatorCancel = { code: 'canceled', message: 'canceled by an operator: stuck at the provider' };

  it('a running generation ends canceled with its hold released, in the cancel itself', async () => {
    const created = await post('/generations', { organization_id: org, kind: 'image', prompt: 'A lighthouse at dusk' });
    expect(created.status, show(created)).to.equal(201);
    const id = created.body.generation.id as string;
    await eventually('the generation runs', async () => (await stack.db('generations').where({ id }).first('status')).status === 'running');
    const job = await jobOf(generationJob, 'generation_id', id);

    await cancelFromConsole(job.id);
    const generation = await stack.db('generations').where({ id }).first('status', 'credits_charged', 'error', 'call_id');
    expect(generation).to.deep.include({ status: 'canceled', credits_charged: 0, error: operatorCancel });
    const hold = await stack
      .db('credit_holds')
      .where({ run_id: `metered-call:${generation.call_id}` })
      .first('status', 'captured');
    expect(hold).to.deep.equal({ status: 'released', captured: 0 });
    expect(await endsOf(job.id)).to.deep.equal([{ end: 'canceled', reason: { ...operatorCancel, redacted: false } }]);
    // The worker's attempt heard it and wrote nothing: the history says so.
    await eventually(
      'the attempt is recorded as cancelled',
      async () => (await stack.db('job_attempts').where({ job_id: job.id }).first('outcome'))?.outcome === 'cancelled',
    );
    expect(await stack.db('assets').where({ generation_id: id })).to.have.length(0);
    expect(await reconcileCredits(stack.db, org)).to.deep.equal([]);
  });

  it('a streaming chat run ends stopped: what it showed kept and charged, the rest released, the lock free', async () => {
    const conversation = await createConversation(stack.server, owner, org, { title: 'Console cancel' });
    await post(`/conversations/${conversation.id}/messages`, { content: 'Tell me a long story about lighthouses.' });
    const started = await post(`/conversations/${conversation.id}/run`, { model: 'sandbox-chat', max_credits: 40 });
    expect(started.status, show(started)).to.equal(201);
    const runId = started.body.run.id as string;
    await eventually('the run streams', async () => (await stack.db('chat_runs').where({ id: runId }).first('snapshot')).snapshot.length > 0);
    const job = await jobOf(chatRunJob, 'run_id', runId);

    await cancelFromConsole(job.id);
    const run = await stack.db('chat_runs').where({ id: runId }).first('status', 'snapshot', 'credits_charged', 'hold_id', 'answer_message_id');
    expect(run.status).to.equal('stopped');
    const hold = await stack.db('credit_holds').where({ id: run.hold_id }).first('status', 'amount', 'captured', 'released');
    expect(hold).to.deep.equal({ status: 'captured', amount: 40, captured: run.credits_charged, released: 40 - run.credits_charged });
    expect(await stack.db('conversation_messages').where({ id: run.answer_message_id }).first('content')).to.deep.equal({ content: run.snapshot });
    expect((await stack.db('conversations').where({ id: conversation.id }).first('active_run_id')).active_run_id).to.equal(null);
    expect(await endsOf(job.id)).to.deep.equal([{ end: 'canceled', reason: { ...operatorCancel, redacted: false } }]);
    expect(await reconcileCredits(stack.db, org)).to.deep.equal([]);
  });

  it('a link import ends in error with the reason, and its download is aborted', async () => {
    const created = await post('/assets/imports/link', { organization_id: org, url: `${upstream.url}/slow.txt` });
    expect(created.status, show(created)).to.equal(201);
    const id = created.body.id as string;
    await eventually('the worker is downloading', async () => hanging.length > 0);
    const job = await jobOf(assetImportJob, 'asset_id', id);

    await cancelFromConsole(job.id);
    const asset = await stack.db('assets').where({ id }).first('upload_file_state', 'import_error');
    expect(asset).to.deep.equal({ upload_file_state: 'error', import_error: operatorCancel });
    await eventually('the download was aborted', async () => closed === 1);
    expect(await endsOf(job.id)).to.deep.equal([{ end: 'canceled', reason: { ...operatorCancel, redacted: false } }]);
  });

  it('a metered read waiting at its provider: the call ends canceled with its hold released, and the waiting request is told (503, nothing charged)', async () => {
    const pending = post('/social/net2_profile', { organization_id: org, input: { username: 'waiting' }, tool_call_id: 'console-cancel' });
    const call = await eventually('the call runs', async () => {
      const row = await stack.db('metered_calls').where({ tool_call_id: 'console-cancel' }).first('id', 'status');
      return row?.status === 'running' && socialHeld === 1 ? row : null;
    });
    const job = await jobOf(meteredCallJob, 'call_id', call.id);
    await cancelFromConsole(job.id);
    expect(await stack.db('metered_calls').where({ id: call.id }).first('status', 'credits_charged', 'error')).to.deep.equal({
      status: 'canceled',
      credits_charged: 0,
      error: operatorCancel,
    });
    expect(
      await stack
        .db('credit_holds')
        .where({ run_id: `metered-call:${call.id}` })
        .first('status', 'captured'),
    ).to.deep.equal({ status: 'released', captured: 0 });
    const answered = await pending;
    expect(answered.status, show(answered)).to.equal(503);
    expect(answered.body.message).to.equal('net2_profile: canceled by an operator: stuck at the provider; nothing was charged');
    await eventually('the provider call was aborted', async () => socialClosed === 1);
    expect(await endsOf(job.id)).to.deep.equal([{ end: 'canceled', reason: { ...operatorCancel, redacted: false } }]);
  });

  it('a scheduled run whose chat turn is canceled ends canceled, with the credits its turn used', async () => {
    const task = await post('/scheduled-tasks', {
      organization_id: org,
      title: 'Console cancel',
      prompt: 'Write a long essay about harbours.',
      schedule: { cron: '0 6 * * *', timezone: 'UTC' },
    });
    expect(task.status, show(task)).to.equal(201);
    const triggered = await post(`/scheduled-tasks/${task.body.scheduled_task.id}/trigger`);
    expect(triggered.status, show(triggered)).to.equal(202);
    const runId = triggered.body.run.id as string;
    const run = await eventually('the run streams its turn', async () => {
      const row = await stack.db('scheduled_task_runs').where({ id: runId }).first('status', 'chat_run_id');
      const chat = row?.chat_run_id && (await stack.db('chat_runs').where({ id: row.chat_run_id }).first('snapshot'));
      return chat && chat.snapshot.length > 0 ? row : null;
    });
    const job = await jobOf(chatRunJob, 'run_id', run.chat_run_id);
    await cancelFromConsole(job.id);
    const chat = await stack.db('chat_runs').where({ id: run.chat_run_id }).first('status', 'credits_charged');
    expect(chat.status).to.equal('stopped');
    // The turn's end sent the run's continuation: the run ends as its turn did.
    const ended = await eventually('the run ended', async () => {
      const row = await stack.db('scheduled_task_runs').where({ id: runId }).first('status', 'credits_used', 'error');
      return row.status !== 'running' ? row : null;
    });
    expect(ended).to.deep.equal({ status: 'canceled', credits_used: chat.credits_charged, error: { code: 'canceled', message: 'the run was canceled' } });
    expect(await reconcileCredits(stack.db, org)).to.deep.equal([]);
  });

  it('a retry reopens what its kind can reopen: a failed link import runs again and succeeds; a failed generation is refused (409), its credits stay released', async () => {
    const created = await post('/assets/imports/link', { organization_id: org, url: `${upstream.url}/flip.txt` });
    const assetId = created.body.id as string;
    await eventually('the import failed for good', async () => (await jobOf(assetImportJob, 'asset_id', assetId))?.state === 'failed');
    expect(await stack.db('assets').where({ id: assetId }).first('upload_file_state')).to.deep.equal({ upload_file_state: 'error' });
    flipped = true;
    const importJob = await jobOf(assetImportJob, 'asset_id', assetId);
    const retried = await post(`/ops/jobs/${importJob.id}/retry`, { reason: 'the site serves text now' });
    expect(retried.status, show(retried)).to.equal(200);
    await eventually(
      'the import succeeded',
      async () => (await stack.db('assets').where({ id: assetId }).first('upload_file_state')).upload_file_state === 'success',
    );
    expect(await stack.db('assets').where({ id: assetId }).first('import_error')).to.deep.equal({ import_error: null });

    const generation = await post('/generations', { organization_id: org, kind: 'text', prompt: 'sandbox-fail' });
    const generationId = generation.body.generation.id as string;
    await eventually('the generation failed', async () => (await jobOf(generationJob, 'generation_id', generationId))?.state === 'failed');
    const generationJobRow = await jobOf(generationJob, 'generation_id', generationId);
    const refused = await post(`/ops/jobs/${generationJobRow.id}/retry`, { reason: 'try again' });
    expect(refused.status, show(refused)).to.equal(409);
    expect(refused.body.message).to.match(/^this job is failed and its work ended with the failure \(generation\.run\.v1: /);
    expect((await jobOf(generationJob, 'generation_id', generationId)).state).to.equal('failed');
    expect(await stack.db('generations').where({ id: generationId }).first('status')).to.deep.equal({ status: 'failed' });
  });
});
