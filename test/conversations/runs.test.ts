import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { createDb, type Db } from '../../src/db/knex.ts';
import { reconcileCredits } from '../../src/credits/reconcile.ts';
import { createLogger } from '../../src/platform/logger.ts';
import { startWorker, type WorkerProcess } from '../../workers/main.ts';
import { eventually, isolatedDatabase } from '../jobs/support.ts';
import { testConfig } from '../support/config.ts';
import { addMember, createConversation, createOrganization, newUser, type TestUser } from '../support/factories.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

const runFields = [
  'answer_message_id',
  'approval_expires_at',
  'context',
  'conversation_id',
  'created_at',
  'credits_charged',
  'error',
  'heartbeat_at',
  'id',
  'max_credits',
  'message_id',
  'model',
  'organization_id',
  'snapshot',
  'status',
  'tool_calls',
  'tools',
  'updated_at',
  'user_id',
];

/** The run lock and chat runs end to end: a real web process, real pg-boss and a real worker on the sandbox model. */
describe('conversation runs (run lock, chat runs on a worker)', function () {
  this.timeout(60_000);
  let server: TestServer;
  let worker: WorkerProcess;
  let db: Db;
  let alice: TestUser;
  let org: string;

  before(async () => {
    // The sandbox streams a word every 60 ms (about two seconds a turn), so a stop lands mid-stream.
    const overrides = { CHAT_SANDBOX_DELAY_MS: '60', WORKER_POLL_INTERVAL_SECONDS: '0.5' };
    const url = await isolatedDatabase();
    db = createDb(url, { max: 4 });
    server = await startTestServer(overrides, { databaseUrl: url });
    const config = testConfig(overrides);
    worker = await startWorker(config, url, createLogger(config, 'test-worker'));
    alice = newUser();
    org = await createOrganization(server, alice);
  });
  after(async () => {
    await worker?.stop();
    await server?.stop();
    await db?.destroy();
  });

  async function conversationWithQuestion(content = 'How do I plan a trip to Lisbon?') {
    const conversation = await createConversation(server, alice, org, { title: 'Trip' });
    const res = await server.request('post', `/conversations/${conversation.id}/messages`, { token: alice.token, body: { content } });
    expect(res.status).to.equal(201);
    return { conversation, question: res.body.message };
  }
  const runRow = (id: string) => db('chat_runs').where({ id }).first();
  const finished = (id: string) =>
    eventually(`run ${id} finished`, async () => {
      const row = await runRow(id);
      return row.credits_charged !== null ? row : null;
    });
  const lockOf = async (conversationId: string) => (await db('conversations').where({ id: conversationId }).first('active_run_id')).active_run_id;
  const ledgerOf = (holdId: string) => db('credit_ledger_entries').where({ hold_id: holdId }).orderBy('seq').select('kind', 'amount', 'metadata');

  it('two concurrent acquires: exactly one 201 and one 409; the run answers, charges once and frees the lock', async () => {
    const { conversation, question } = await conversationWithQuestion();
    const [a, b] = await Promise.all(
      [0, 1].map(() =>
        server.request('post', `/conversations/${conversation.id}/run`, { token: alice.token, body: { model: 'sandbox-chat', max_credits: 40 } }),
      ),
    );
    expect([a!.status, b!.status].sort()).to.deep.equal([201, 409]);
    const started = a!.status === 201 ? a! : b!;
    const refused = a!.status === 201 ? b! : a!;
    expect(refused.body.code).to.equal('conflict');
    expect(Object.keys(started.body)).to.deep.equal(['run']);
    const run = started.body.run;
    expect(Object.keys(run).sort()).to.deep.equal(runFields);
    expect(run).to.include({
      status: 'queued',
      conversation_id: conversation.id,
      model: 'sandbox-chat',
      message_id: question.id,
      max_credits: 40,
      user_id: alice.id,
    });
    const locked = await server.request('get', `/conversations/${conversation.id}`, { token: alice.token });
    expect(locked.body.active_run_id).to.equal(run.id);
    expect(locked.body.active_run_at).to.be.a('string');
    // The job was enqueued with the lock.
    expect(await db('pgboss.job').where({ name: 'conversation.chat-run.v1' }).whereRaw(`data->>'run_id' = ?`, [run.id]).count('* as n').first()).to.deep.equal({
      n: 1,
    });

    const done = await finished(run.id);
    expect(done.status).to.equal('succeeded');
    expect(done.snapshot).to.match(/^\[sandbox answer\]/);
    const answer = await db('conversation_messages').where({ id: done.answer_message_id }).first();
    expect(answer).to.include({ parent_id: question.id, role: 'assistant', content: done.snapshot });
    const after = await server.request('get', `/conversations/${conversation.id}`, { token: alice.token });
    expect(after.body).to.include({ active_leaf_id: answer.id, active_run_id: null, message_count: 2 });

    const entries = await ledgerOf(done.hold_id);
    const captures = entries.filter((e) => e.kind === 'capture');
    expect(captures).to.have.length(1);
    expect(captures[0]).to.deep.include({ amount: done.credits_charged, metadata: { model: 'sandbox-chat' } });
    expect(done.credits_charged).to.be.greaterThan(0);
    const hold = await db('credit_holds').where({ id: done.hold_id }).first();
    expect(hold).to.include({ status: 'captured', amount: 40, captured: done.credits_charged, released: 40 - done.credits_charged, run_id: run.id });
    expect(await reconcileCredits(db, org)).to.deep.equal([]);

    const got = await server.request('get', `/conversations/${conversation.id}/run`, { token: alice.token });
    expect(got.status).to.equal(200);
    expect(got.body.run).to.include({ id: run.id, status: 'succeeded', answer_message_id: answer.id, snapshot: answer.content });
    // Nothing live: a snapshot is refused, a stop is a no-op.
    const late = await server.request('post', `/conversations/${conversation.id}/run/snapshot`, { token: alice.token, body: { content: 'x' } });
    expect(late.status).to.equal(409);
    expect((await server.request('delete', `/conversations/${conversation.id}/run`, { token: alice.token })).status).to.equal(204);
  });

  it('stop mid-stream: the provider call ends, the partial answer is kept, only the partial usage is charged, the lock is free', async () => {
    const { conversation, question } = await conversationWithQuestion('What should I pack for a week of hiking in the Alps?');
    const res = await server.request('post', `/conversations/${conversation.id}/run`, { token: alice.token, body: { max_credits: 30 } });
    expect(res.status).to.equal(201);
    const runId = res.body.run.id;
    await eventually('the run streamed a first snapshot', async () => (await runRow(runId)).snapshot.length > 0);
    const client = await server.request('post', `/conversations/${conversation.id}/run/snapshot`, { token: alice.token, body: { content: 'client side' } });
    expect(client.status).to.equal(200);
    expect(client.body.run).to.include({ id: runId, status: 'running' });

    // The worker's next snapshot replaces the client's; what is stored when the stop commits is what is kept.
    await eventually('the worker wrote a snapshot again', async () => (await runRow(runId)).snapshot.startsWith('[sandbox answer]'));

    const stop = await server.request('delete', `/conversations/${conversation.id}/run`, { token: alice.token });
    expect(stop.status).to.equal(204);
    // Settled in the stop's own transaction: nothing to wait for.
    expect(await lockOf(conversation.id)).to.equal(null);
    const done = await runRow(runId);
    expect(done.status).to.equal('stopped');
    expect(done.credits_charged).to.be.a('number');
    const full = '[sandbox answer]';
    expect(done.snapshot.startsWith(full)).to.equal(true);
    expect(done.snapshot).not.to.match(/\(reference [0-9a-f]{8}\)$/);
    const answer = await db('conversation_messages').where({ id: done.answer_message_id }).first();
    expect(answer).to.include({ parent_id: question.id, role: 'assistant', content: done.snapshot });
    const hold = await db('credit_holds').where({ id: done.hold_id }).first();
    expect(hold).to.include({ status: 'captured', amount: 30, captured: done.credits_charged, released: 30 - done.credits_charged });
    expect(done.credits_charged).to.be.within(1, 29);
    const captures = (await ledgerOf(done.hold_id)).filter((e) => e.kind === 'capture');
    // No model named: the organization's first available one, stamped on the capture.
    expect(captures.map((c) => c.metadata)).to.deep.equal([{ model: done.model }]);
    expect(await reconcileCredits(db, org)).to.deep.equal([]);
    // The snapshot the stopped run shows stays what it answered.
    const got = await server.request('get', `/conversations/${conversation.id}/run`, { token: alice.token });
    expect(got.body.run).to.include({ id: runId, status: 'stopped', snapshot: answer.content });
    // Free again.
    const again = await server.request('post', `/conversations/${conversation.id}/run`, { token: alice.token, body: {} });
    expect(again.status).to.equal(201);
    await finished(again.body.run.id);
  });

  it('a live run holds the lock however old its last progress; a stop ends it even when its job is gone', async () => {
    const { conversation, question } = await conversationWithQuestion();
    // A run whose job an operator deleted, last heard of an hour ago.
    const [orphan] = await db('chat_runs')
      .insert({
        conversation_id: conversation.id,
        organization_id: org,
        user_id: alice.id,
        model: 'sandbox-chat',
        message_id: question.id,
        status: 'running',
        heartbeat_at: db.raw(`now() - interval '1 hour'`),
      })
      .returning('id');
    await db('conversations')
      .where({ id: conversation.id })
      .update({ active_run_id: orphan.id, active_run_at: db.raw(`now() - interval '1 hour'`) });
    const refused = await server.request('post', `/conversations/${conversation.id}/run`, { token: alice.token, body: {} });
    expect(refused.status).to.equal(409);
    expect((await server.request('delete', `/conversations/${conversation.id}/run`, { token: alice.token })).status).to.equal(204);
    expect(await runRow(orphan.id)).to.deep.include({ status: 'stopped', credits_charged: 0, answer_message_id: null });
    expect(await lockOf(conversation.id)).to.equal(null);
    const res = await server.request('post', `/conversations/${conversation.id}/run`, { token: alice.token, body: {} });
    expect(res.status).to.equal(201);
    const done = await finished(res.body.run.id);
    expect(done.status).to.equal('succeeded');
    expect(await lockOf(conversation.id)).to.equal(null);
  });

  it('refuses an unavailable model or a foreign message (400), viewers (403), outsiders (404); no credits → 402, lock free', async () => {
    const { conversation } = await conversationWithQuestion();
    const other = await conversationWithQuestion();
    for (const [body, field] of [
      [{ model: 'no-such-model' }, 'model'],
      [{ message_id: other.question.id }, 'message_id'],
      [{ max_credits: 0 }, 'max_credits'],
      [{ surprise: 1 }, ''],
    ] as const) {
      const res = await server.request('post', `/conversations/${conversation.id}/run`, { token: alice.token, body });
      expect(res.status, JSON.stringify(body)).to.equal(400);
      if (field) expect(res.body.data.issues[0].path).to.deep.equal([field]);
    }
    const empty = await createConversation(server, alice, org);
    expect((await server.request('post', `/conversations/${empty.id}/run`, { token: alice.token, body: {} })).status).to.equal(400);

    const viewer = newUser();
    await addMember(db, org, viewer);
    const grant = await server.request('post', `/access/chat_conversation/${conversation.id}/grants`, {
      token: alice.token,
      body: { user_id: viewer.id, role: 'viewer' },
    });
    expect(grant.status).to.equal(201);
    const outsider = newUser();
    for (const [user, status] of [
      [viewer, 403],
      [outsider, 404],
    ] as const) {
      expect((await server.request('post', `/conversations/${conversation.id}/run`, { token: user.token, body: {} })).status).to.equal(status);
      expect((await server.request('delete', `/conversations/${conversation.id}/run`, { token: user.token })).status).to.equal(status);
      const snap = await server.request('post', `/conversations/${conversation.id}/run/snapshot`, { token: user.token, body: { content: 'x' } });
      expect(snap.status).to.equal(status);
    }
    expect((await server.request('get', `/conversations/${conversation.id}/run`, { token: viewer.token })).status).to.equal(404);
    expect((await server.request('get', `/conversations/${randomUUID()}/run`, { token: alice.token })).status).to.equal(404);

    // More than the balance: the hold is refused at once (402) and nothing starts.
    const res = await server.request('post', `/conversations/${conversation.id}/run`, { token: alice.token, body: { max_credits: 1_000_000 } });
    expect(res.status).to.equal(402);
    expect(res.body.code).to.equal('payment_required');
    expect(res.body.data.issues[0].path).to.deep.equal(['balance']);
    expect(await lockOf(conversation.id)).to.equal(null);
    expect(await reconcileCredits(db, org)).to.deep.equal([]);
  });
});
