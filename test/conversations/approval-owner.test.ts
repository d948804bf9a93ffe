import { expect } from 'chai';
import { createDb, type Db } from '../../src/db/knex.ts';
import { createLogger } from '../../src/platform/logger.ts';
import { startWorker, type WorkerProcess } from '../../workers/main.ts';
import { eventually, isolatedDatabase } from '../jobs/support.ts';
import { testConfig } from '../support/config.ts';
import { addMember, createConversation, createOrganization, newUser, type TestUser } from '../support/factories.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

/**
 * Issue 36: an approval is the turn owner's. Bob's turn waits for approval of a billed tool; Frank,
 * an editor of Bob's conversation, and Vera, a viewer, may not answer it (403), Olga, who cannot read
 * it, gets 404 — and the tool is not called. Bob's answer is kept on the call and in the activity feed.
 */
describe('chat turns: only the turn’s user approves its tool calls', function () {
  this.timeout(60_000);
  let server: TestServer;
  let worker: WorkerProcess;
  let db: Db;
  let alice: TestUser;
  let bob: TestUser;
  let frank: TestUser;
  let vera: TestUser;
  let olga: TestUser;
  let org: string;

  before(async () => {
    const overrides = { CHAT_SANDBOX_DELAY_MS: '20', WORKER_POLL_INTERVAL_SECONDS: '0.5' };
    const url = await isolatedDatabase();
    db = createDb(url, { max: 4 });
    server = await startTestServer(overrides, { databaseUrl: url });
    worker = await startWorker(testConfig(overrides), url, createLogger(testConfig(overrides), 'test-worker'));
    [alice, bob, frank, vera, olga] = [newUser(), newUser(), newUser(), newUser(), newUser()];
    org = await createOrganization(server, alice);
    for (const user of [bob, frank, vera, olga]) await addMember(db, org, user);
  });
  after(async () => {
    await worker?.stop();
    await server?.stop();
    await db?.destroy();
  });

  const grant = async (conversationId: string, user: TestUser, role: 'viewer' | 'editor') =>
    expect(
      (await server.request('post', `/access/chat_conversation/${conversationId}/grants`, { token: bob.token, body: { user_id: user.id, role } })).status,
    ).to.equal(201);
  const runOf = async (conversationId: string) => (await server.request('get', `/conversations/${conversationId}/run`, { token: bob.token })).body.run;
  const searches = (conversationId: string) => db('metered_calls').where({ conversation_id: conversationId, operation: 'search' });
  const answer = (user: TestUser, conversationId: string, toolCallId: string, approve: boolean) =>
    server.request('post', `/conversations/${conversationId}/run/approvals`, {
      token: user.token,
      body: { decisions: [{ tool_call_id: toolCallId, approve }] },
    });

  /** Bob's conversation, shared with Frank (editor) and Vera (viewer), its turn waiting for approval of `search`. */
  async function bobsWaitingTurn() {
    const conversation = await createConversation(server, bob, org, { title: 'Bob asks' });
    expect((await server.request('patch', `/conversations/${conversation.id}`, { token: bob.token, body: { approval_tools: ['search'] } })).status).to.equal(
      200,
    );
    await grant(conversation.id, frank, 'editor');
    await grant(conversation.id, vera, 'viewer');
    await server.request('post', `/conversations/${conversation.id}/messages`, { token: bob.token, body: { content: '/tool search {"query":"harbours"}' } });
    const started = await server.request('post', `/conversations/${conversation.id}/run`, {
      token: bob.token,
      body: { model: 'sandbox-chat', max_credits: 60 },
    });
    expect(started.status, JSON.stringify(started.body)).to.equal(201);
    const waiting = await eventually('the turn waits for approval', async () => {
      const got = await runOf(conversation.id);
      return got.status === 'awaiting_approval' ? got : null;
    });
    return { conversationId: conversation.id as string, runId: started.body.run.id as string, callId: waiting.tool_calls[0].tool_call_id as string };
  }

  it('an editor or a viewer of the conversation gets 403, a member who cannot read it 404; the tool is not called', async () => {
    const { conversationId, callId } = await bobsWaitingTurn();
    const byEditor = await answer(frank, conversationId, callId, true);
    expect(byEditor.status, JSON.stringify(byEditor.body)).to.equal(403);
    expect(byEditor.body.code).to.equal('forbidden');
    expect(byEditor.body.message).to.include('only they may approve or reject');
    expect((await answer(frank, conversationId, callId, false)).status).to.equal(403);
    expect((await answer(vera, conversationId, callId, true)).status).to.equal(403);
    const byStranger = await answer(olga, conversationId, callId, true);
    expect(byStranger.status).to.equal(404);
    expect(byStranger.body.code).to.equal('not_found');
    // Nothing ran, nothing was decided: the call still waits for Bob.
    const run = await runOf(conversationId);
    expect(run.status).to.equal('awaiting_approval');
    expect(run.tool_calls[0]).to.include({ status: 'awaiting_approval', approved: null, decided_by_id: null, decided_at: null });
    expect(await searches(conversationId)).to.deep.equal([]);
    expect(await db('activity_events').where({ organization_id: org }).whereLike('action', 'conversation.tool_call.%')).to.deep.equal([]);
  });

  it('the turn’s user approves: the call runs for them, and who approved it is on the call and in the activity feed', async () => {
    const { conversationId, runId, callId } = await bobsWaitingTurn();
    const approved = await answer(bob, conversationId, callId, true);
    expect(approved.status, JSON.stringify(approved.body)).to.equal(200);
    expect(approved.body.run.tool_calls[0]).to.include({ approved: true, decided_by_id: bob.id });
    expect(approved.body.run.tool_calls[0].decided_at).to.be.a('string');
    await eventually('the turn finished', async () => (await db('chat_runs').where({ id: runId }).first()).credits_charged !== null);
    // The read ran as Bob's turn: attributed to him, never to an approver.
    const reads = await searches(conversationId);
    expect(reads.map((r) => [r.status, r.user_id])).to.deep.equal([['succeeded', bob.id]]);
    const feed = await server.request('get', `/organizations/${org}/activity`, { token: alice.token });
    const entry = feed.body.items.find((e: { action: string }) => e.action === 'conversation.tool_call.approved');
    expect(entry).to.deep.include({ actor_id: bob.id, subject_type: 'chat_conversation', subject_id: conversationId });
    expect(entry.data).to.deep.equal({ run_id: runId, tool_call_id: callId, name: 'search' });
  });

  it('the turn’s user rejects: recorded as theirs; the tool is not called', async () => {
    const { conversationId, runId, callId } = await bobsWaitingTurn();
    const rejected = await answer(bob, conversationId, callId, false);
    expect(rejected.status).to.equal(200);
    expect(rejected.body.run.tool_calls[0]).to.include({ status: 'failed', approved: false, decided_by_id: bob.id });
    await eventually('the turn finished', async () => (await db('chat_runs').where({ id: runId }).first()).credits_charged !== null);
    expect(await searches(conversationId)).to.deep.equal([]);
    const rows = await db('activity_events').where({ organization_id: org, action: 'conversation.tool_call.rejected', subject_id: conversationId });
    expect(rows.map((r) => r.actor_id)).to.deep.equal([bob.id]);
  });

  it('the turn’s user removed while the approval waits: the turn is stopped at once, its hold released, the lock freed; the tool is not called', async () => {
    const { conversationId, runId, callId } = await bobsWaitingTurn();
    expect((await db('credit_holds').where({ run_id: runId }).first()).status).to.equal('held');
    // This turn and the first test's, which nobody answered: both end with Bob's membership.
    const waiting = await db('chat_runs').where({ user_id: bob.id }).whereNotNull('awaiting_approval_until').pluck('id');
    expect(waiting).to.have.length(2);
    expect((await server.request('delete', `/organizations/${org}/members/${bob.id}`, { token: alice.token })).status).to.equal(204);
    const entry = await db('activity_events')
      .where({ organization_id: org, action: 'member.removed', subject_id: bob.id })
      .orderBy('created_at', 'desc')
      .first();
    expect(entry.data).to.include({ approvals_ended: 2 });
    const run = await eventually('the turn was stopped', async () => {
      const row = await db('chat_runs').where({ id: runId }).first();
      return row.credits_charged !== null ? row : null;
    });
    expect(run.status).to.equal('stopped');
    expect((await db('credit_holds').where({ run_id: runId }).first()).status).not.to.equal('held');
    expect((await db('conversations').where({ id: conversationId }).first()).active_run_id).to.equal(null);
    // Bob's answer is 404 (he cannot read it now); the owner, who can, finds no turn waiting (409).
    expect((await answer(bob, conversationId, callId, true)).status).to.equal(404);
    expect((await answer(alice, conversationId, callId, true)).status).to.equal(409);
    expect(await searches(conversationId)).to.deep.equal([]);
  });
});
