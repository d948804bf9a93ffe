import type { IncomingMessage, ServerResponse } from 'node:http';
import { expect } from 'chai';
import { reconcileCredits } from '../../src/credits/reconcile.ts';
import { chatRunJob } from '../../src/conversations/jobs.ts';
import { meteredCallJob } from '../../src/metering/jobs.ts';
import { createDb, eventually, isolatedDatabase, spawnWorker, retryDeadAttemptsQuickly, tuneQueue } from '../jobs/support.ts';
import { createConversation, createOrganization, newUser, type TestUser } from '../support/factories.ts';
import { useChildProcesses } from '../support/processes.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { follow } from '../support/sse.ts';
import { json, readJson, startUpstream, type FakeUpstream } from '../support/upstream.ts';
import type { Db } from '../../src/db/knex.ts';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const delta = (text: string) => `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: text } }] })}\n\n`;
/** The model the turns run on: a catalog model of the HTTP service (CHAT_API_URL), so the adapter is what streams. */
const MODEL = 'gpt-4o-mini';
/** What a stopped turn is charged: the prompt it was sent (the run's `context.tokens`), its answer at about four characters a token, gpt-4o-mini prices (1 and 4 credits per 1k). */
const estimatedCredits = (promptTokens: number, answer: string) => Math.ceil((promptTokens * 1 + Math.ceil(answer.length / 4) * 4) / 1000);
const QUICK_ANSWER = 'The answer is 42.';
/** Reported by the quick upstream: 2000 × 1 + 3000 × 4 per 1k (gpt-4o-mini) → 14 credits. */
const QUICK_CREDITS = 14;

/**
 * Chat runs under faults, with real worker processes and the OpenAI-compatible HTTP adapter
 * against a fake chat service on loopback: a stop closes the upstream connection; a worker
 * SIGKILLed mid-stream leaves a lock and a hold that are resolved exactly once, by the retried job
 * or, on the last attempt, by the runtime's end of the failed job; SSE followers that hang up are
 * forgotten at once.
 */
describe('conversation runs under faults (worker processes, HTTP chat adapter)', function () {
  this.timeout(120_000);
  const HEARTBEAT_SECONDS = 10; // pg-boss's minimum
  let url: string;
  let db: Db;
  let server: TestServer;
  let upstream: FakeUpstream;
  let alice: TestUser;
  let org: string;
  /** How the next requests are answered, in order; then `quick`. */
  let plans: ('slow' | 'quick')[] = [];
  const calls: { plan: string; closedEarly: boolean; closedAt?: number }[] = [];
  const open: ServerResponse[] = [];
  const worker = useChildProcesses(() =>
    spawnWorker(url, { CHAT_API_URL: upstream.url, CHAT_API_KEY: 'sk-test-fault', SEARCH_API_URL: upstream.url, WORKER_POLL_INTERVAL_SECONDS: '0.5' }),
  );
  /** Search requests for "held" not answered yet (the first is held; later ones are answered at once). */
  const heldSearches: ServerResponse[] = [];
  let searches = 0;
  const answerSearch = async (req: IncomingMessage, res: ServerResponse) => {
    const body = await readJson(req);
    searches += 1;
    if (body.query === 'held' && searches === 1) return void heldSearches.push(res);
    json(res, 200, { results: [{ title: `About ${body.query}`, url: 'https://example.com/harbour' }] });
  };

  const answer = async (req: IncomingMessage, res: ServerResponse) => {
    // A turn that asks for a tool: its first request calls `search` (one 1-credit page + 1 a call = 2 credits).
    const body = await readJson(req);
    if (body.tools && body.messages.at(-1)?.role === 'user' && String(body.messages.at(-1).content).startsWith('Use the search tool')) {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const call = { index: 0, id: 'call_held', type: 'function', function: { name: 'search', arguments: '{"query":"held"}' } };
      res.write(`data: ${JSON.stringify({ choices: [{ index: 0, delta: { role: 'assistant', content: null, tool_calls: [call] } }] })}\n\n`);
      res.write(`data: ${JSON.stringify({ choices: [], usage: { prompt_tokens: 2000, completion_tokens: 3000 } })}\n\n`);
      return void res.end('data: [DONE]\n\n');
    }
    const call: (typeof calls)[number] = { plan: plans.shift() ?? 'quick', closedEarly: false };
    calls.push(call);
    let finished = false;
    res.on('close', () => {
      call.closedEarly = !finished;
      call.closedAt = Date.now();
    });
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    if (call.plan === 'quick') {
      for (const word of QUICK_ANSWER.split(/(?<= )/)) res.write(delta(word));
      res.write(`data: ${JSON.stringify({ choices: [], usage: { prompt_tokens: 2000, completion_tokens: 3000 } })}\n\n`);
      finished = true;
      return void res.end('data: [DONE]\n\n');
    }
    // Slow: a word every 100 ms for a minute (stopped, killed or hung up long before).
    open.push(res);
    for (let i = 0; i < 600 && !res.destroyed; i++) {
      res.write(delta(`word${i} `));
      await sleep(100);
    }
    finished = true;
    res.end('data: [DONE]\n\n');
  };

  before(async () => {
    upstream = await startUpstream({ '/v1/chat/completions': (req, res) => void answer(req, res), '/v1/search': (req, res) => void answerSearch(req, res) });
    url = await isolatedDatabase();
    db = createDb(url, { max: 3 });
    await retryDeadAttemptsQuickly(url, chatRunJob.name, HEARTBEAT_SECONDS);
    await retryDeadAttemptsQuickly(url, meteredCallJob.name, HEARTBEAT_SECONDS);
    // The web process has the chat service configured too: it accepts runs on its models only then.
    server = await startTestServer({ CHAT_API_URL: upstream.url, SEARCH_API_URL: upstream.url }, { databaseUrl: url });
    alice = newUser();
    org = await createOrganization(server, alice);
  });
  after(async () => {
    for (const res of [...open, ...heldSearches]) res.destroy();
    await server?.stop();
    await db?.destroy();
    await upstream?.close();
  });

  async function startRun(question: string, maxCredits = 50) {
    const conversation = await createConversation(server, alice, org, { title: 'Faults' });
    const posted = await server.request('post', `/conversations/${conversation.id}/messages`, { token: alice.token, body: { content: question } });
    expect(posted.status).to.equal(201);
    const res = await server.request('post', `/conversations/${conversation.id}/run`, {
      token: alice.token,
      body: { model: MODEL, max_credits: maxCredits },
    });
    expect(res.status).to.equal(201);
    return { conversationId: conversation.id as string, runId: res.body.run.id as string };
  }
  const runRow = (id: string) => db('chat_runs').where({ id }).first();
  const settled = (id: string) =>
    eventually(`run ${id} settled`, async () => {
      const row = await runRow(id);
      return row.credits_charged !== null ? row : null;
    });
  const streaming = (id: string) => eventually(`run ${id} streamed`, async () => (await runRow(id)).snapshot.length > 0);
  const lockOf = async (conversationId: string) => (await db('conversations').where({ id: conversationId }).first('active_run_id')).active_run_id;
  const holdOf = (id: string) => db('credit_holds').where({ id }).first('status', 'amount', 'captured', 'released');
  const ledgerKinds = async (holdId: string) =>
    (await db('credit_ledger_entries').where({ hold_id: holdId }).orderBy('seq').select('kind', 'amount')).map((e) => `${e.kind}:${e.amount}`);
  const assistantMessages = (conversationId: string) =>
    db('conversation_messages').where({ conversation_id: conversationId, role: 'assistant' }).select('id', 'content');
  const jobOf = (runId: string) => db('pgboss.job').where({ name: chatRunJob.name }).whereRaw(`data->>'run_id' = ?`, [runId]).first('state', 'retry_count');

  it('stop mid-stream closes the upstream connection; the partial answer is kept and only its estimate charged; a follower that hangs up is forgotten', async () => {
    plans = ['slow'];
    const question = 'Describe every lighthouse on the Portuguese coast.';
    const { conversationId, runId } = await startRun(question, 30);
    worker();
    await streaming(runId);
    const path = `/conversations/${conversationId}/run/events`;
    const [leaving, staying] = await Promise.all([follow(server.url, path, alice.token), follow(server.url, path, alice.token)]);
    await eventually('both followers had an event', async () => leaving.events.length > 0 && staying.events.length > 0);
    expect(server.web.runEventStreams()).to.equal(2);
    leaving.hangUp();
    await leaving.ended;
    await eventually('the hung-up stream is unsubscribed', async () => server.web.runEventStreams() === 1);

    // What is stored when the stop commits is what is kept: let a second snapshot land first.
    await eventually('two words streamed', async () => /^word0 word1 /.test((await runRow(runId)).snapshot));
    const stop = await server.request('delete', `/conversations/${conversationId}/run`, { token: alice.token });
    expect(stop.status).to.equal(204);
    const call = calls.at(-1)!;
    // The worker is told at the stop's commit and aborts the provider call (the latency is measured in bench, not here).
    await eventually('the upstream saw the connection close', async () => call.closedAt !== undefined);
    expect(call).to.include({ plan: 'slow', closedEarly: true });

    const done = await settled(runId);
    expect(done.status).to.equal('stopped');
    expect(done.snapshot).to.match(/^word0 word1 /);
    const answers = await assistantMessages(conversationId);
    expect(answers).to.deep.equal([{ id: done.answer_message_id, content: done.snapshot }]);
    expect(done.credits_charged).to.equal(estimatedCredits(done.context.tokens, done.snapshot));
    expect(await holdOf(done.hold_id)).to.deep.equal({ status: 'captured', amount: 30, captured: done.credits_charged, released: 30 - done.credits_charged });
    expect(await ledgerKinds(done.hold_id)).to.deep.equal(['hold:30', `capture:${done.credits_charged}`, `release:${30 - done.credits_charged}`]);
    await staying.ended;
    expect(staying.events.at(-1)).to.deep.equal({ event: 'done', data: { run_id: runId, status: 'stopped', answer_message_id: done.answer_message_id } });
    expect(server.web.runEventStreams()).to.equal(0);
    expect(await lockOf(conversationId)).to.equal(null);
    expect(await reconcileCredits(db, org)).to.deep.equal([]);
  });

  it('a worker SIGKILLed mid-stream: the lock holds, the retried job on a survivor answers once and captures once', async () => {
    plans = ['slow', 'quick'];
    const { conversationId, runId } = await startRun('What is six times seven?');
    const first = worker();
    await streaming(runId);
    process.kill(-first.child.pid!, 'SIGKILL');
    expect((await first.exited).signal).to.equal('SIGKILL');
    const dead = await runRow(runId);
    expect(dead).to.include({ status: 'running', credits_charged: null });
    expect(await holdOf(dead.hold_id)).to.include({ status: 'held', amount: 50 });
    // The job is alive in pg-boss's eyes: the lock still refuses a second turn.
    const second = await server.request('post', `/conversations/${conversationId}/run`, { token: alice.token, body: {} });
    expect(second.status).to.equal(409);

    worker();
    const done = await settled(runId);
    expect(done).to.include({ status: 'succeeded', snapshot: QUICK_ANSWER, credits_charged: QUICK_CREDITS });
    expect(await jobOf(runId)).to.deep.equal({ state: 'completed', retry_count: 1 });
    expect(await assistantMessages(conversationId)).to.deep.equal([{ id: done.answer_message_id, content: QUICK_ANSWER }]);
    expect(await holdOf(done.hold_id)).to.deep.equal({ status: 'captured', amount: 50, captured: QUICK_CREDITS, released: 50 - QUICK_CREDITS });
    expect(await ledgerKinds(done.hold_id)).to.deep.equal(['hold:50', `capture:${QUICK_CREDITS}`, `release:${50 - QUICK_CREDITS}`]);
    expect(await lockOf(conversationId)).to.equal(null);
    expect(await reconcileCredits(db, org)).to.deep.equal([]);
  });

  it('a worker SIGKILLed on the last attempt: pg-boss fails the job for good, the sweep ends the run failed, releases its hold once and frees the lock; followers hear it', async () => {
    await tuneQueue(url, chatRunJob.name, { retryLimit: 0 });
    try {
      plans = ['slow', 'quick'];
      const { conversationId, runId } = await startRun('Name three rivers of Spain.');
      const first = worker();
      await streaming(runId);
      const follower = await follow(server.url, `/conversations/${conversationId}/run/events`, alice.token);
      await eventually('the follower had the snapshot', async () => follower.events.length > 0);
      process.kill(-first.child.pid!, 'SIGKILL');
      await first.exited;
      const deadHold = (await runRow(runId)).hold_id;
      // The lock holds while the job is alive in pg-boss's eyes: no takeover by a second liveness signal.
      expect((await server.request('post', `/conversations/${conversationId}/run`, { token: alice.token, body: {} })).status).to.equal(409);

      worker(); // its pg-boss monitor fails the silent attempt for good, its sweep ends the run
      const dead = await settled(runId);
      expect(dead).to.deep.include({
        status: 'failed',
        credits_charged: 0,
        answer_message_id: null,
        error: { code: 'lost', message: 'the worker running the job stopped responding' },
      });
      expect(await jobOf(runId)).to.deep.equal({ state: 'failed', retry_count: 0 });
      expect(await holdOf(deadHold)).to.deep.equal({ status: 'released', amount: 50, captured: 0, released: 50 });
      expect(await ledgerKinds(deadHold)).to.deep.equal(['hold:50', 'release:50']);
      expect(await lockOf(conversationId)).to.equal(null);
      await eventually('the follower heard the end', async () => follower.events.at(-1)?.event === 'done');
      expect(follower.events.at(-1)!.data).to.deep.equal({ run_id: runId, status: 'failed', answer_message_id: null });
      await follower.ended;

      const next = await server.request('post', `/conversations/${conversationId}/run`, {
        token: alice.token,
        body: { model: MODEL, max_credits: 20 },
      });
      expect(next.status).to.equal(201);
      const answered = await settled(next.body.run.id);
      expect(answered).to.include({ status: 'succeeded', snapshot: QUICK_ANSWER, credits_charged: QUICK_CREDITS });
      expect(await assistantMessages(conversationId)).to.deep.equal([{ id: answered.answer_message_id, content: QUICK_ANSWER }]);
      expect(await reconcileCredits(db, org)).to.deep.equal([]);
    } finally {
      await tuneQueue(url, chatRunJob.name, { retryLimit: chatRunJob.policy.retryLimit });
    }
  });
  it('a worker SIGKILLed while a paid tool call runs: the retried turn waits for the same metered call, billed once; one tool message, one capture each', async () => {
    const { conversationId, runId } = await startRun('Use the search tool to find harbours.', 60);
    const first = worker();
    const read = await eventually('the paid read is at the search service', async () => {
      const row = await db('metered_calls').where({ conversation_id: conversationId, operation: 'search' }).first();
      return row && heldSearches.length === 1 ? row : null;
    });
    expect(read).to.include({ tool_call_id: 'call_held', run_lock: true, chat_run_id: runId });
    process.kill(-first.child.pid!, 'SIGKILL');
    expect((await first.exited).signal).to.equal('SIGKILL');

    worker();
    const done = await settled(runId);
    expect(done.status).to.equal('succeeded');
    expect(await jobOf(runId)).to.deep.equal({ state: 'completed', retry_count: 1 });
    // The retried turn found the call its dead attempt had accepted and waited for it: one read, one capture.
    const reads = await db('metered_calls').where({ conversation_id: conversationId }).whereNot({ operation: 'chat_run' });
    expect(reads.map((r) => [r.id, r.status, r.credits_charged])).to.deep.equal([[read.id, 'succeeded', 2]]);
    const readHold = await db('credit_holds')
      .where({ run_id: `metered-call:${read.id}` })
      .first();
    expect(await ledgerKinds(readHold.id)).to.deep.equal(['hold:2', 'capture:2']);
    const calls = await db('chat_tool_calls').where({ run_id: runId });
    expect(calls.map((c) => [c.tool_call_id, c.status, c.credits, c.metered_call_id])).to.deep.equal([['call_held', 'succeeded', 2, read.id]]);
    const messages = await db('conversation_messages').where({ conversation_id: conversationId }).orderBy('created_at').select('role', 'tool_call_id');
    expect(messages.map((m) => m.role)).to.deep.equal(['user', 'assistant', 'tool', 'assistant']);
    expect(await holdOf(done.hold_id)).to.include({ status: 'captured', captured: done.credits_charged });
    expect(await ledgerKinds(done.hold_id)).to.deep.equal(['hold:60', `capture:${done.credits_charged}`, `release:${60 - done.credits_charged}`]);
    expect(await lockOf(conversationId)).to.equal(null);
    expect(await reconcileCredits(db, org)).to.deep.equal([]);
  });
});
