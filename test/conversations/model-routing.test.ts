import type { IncomingMessage, ServerResponse } from 'node:http';
import { expect } from 'chai';
import { reconcileCredits } from '../../src/credits/reconcile.ts';
import { ChatProviderError, createChatProvider, sandboxAnswer } from '../../src/providers/chat/index.ts';
import { eventually } from '../jobs/support.ts';
import { testConfig } from '../support/config.ts';
import { createConversation, createOrganization, newUser, type TestUser } from '../support/factories.ts';
import { type Stack, startStack } from '../support/stack.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { createDb, type Db } from '../../src/db/knex.ts';
import { createLogger } from '../../src/platform/logger.ts';
import { startWorker, type WorkerProcess } from '../../workers/main.ts';
import { isolatedDatabase } from '../jobs/support.ts';
import { type FakeUpstream, readJson, startUpstream } from '../support/upstream.ts';

const UPSTREAM_ANSWER = 'Answered upstream.';
/** The fake service's usage: 200 × 1 + 700 × 4 per 1k at gpt-4o-mini prices → 3 credits (2 had it been billed at sandbox-chat's 1 and 2). */
const UPSTREAM_USAGE = { prompt_tokens: 200, completion_tokens: 700 };
/** About four characters a token: what the sandbox reports as its usage. */
const tokens = (text: string) => Math.max(1, Math.ceil(text.length / 4));

/**
 * One process serves each catalog model by its own provider: with CHAT_API_URL set, a turn on
 * `sandbox-chat` is the sandbox's (the chat service hears nothing of it) and a turn on
 * `gpt-4o-mini` is the chat service's; each held and billed at its model's catalog prices.
 */
describe('chat runs: each model served by its own provider (CHAT_API_URL set)', function () {
  this.timeout(60_000);
  let upstream: FakeUpstream;
  let stack: Stack;
  let alice: TestUser;
  let org: string;
  /** Every request body the fake chat service received, in order. */
  const received: any[] = [];

  const answer = async (req: IncomingMessage, res: ServerResponse) => {
    received.push(await readJson(req));
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write(`data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: UPSTREAM_ANSWER } }] })}\n\n`);
    res.write(`data: ${JSON.stringify({ choices: [], usage: UPSTREAM_USAGE })}\n\n`);
    res.end('data: [DONE]\n\n');
  };

  before(async () => {
    upstream = await startUpstream({ '/v1/chat/completions': (req, res) => void answer(req, res) });
    // The web process and the worker, both with the chat service configured.
    stack = await startStack({ CHAT_API_URL: upstream.url, CHAT_API_KEY: 'sk-test-routing', WORKER_POLL_INTERVAL_SECONDS: '0.5' });
    alice = newUser();
    org = await createOrganization(stack.server, alice);
  });
  after(async () => {
    await stack?.stop();
    await upstream?.close();
  });

  /** A one-message conversation answered on `model` (no max_credits: the hold is the model's default ceiling). */
  async function runOn(model: string, question: string) {
    const { server, db } = stack;
    const conversation = await createConversation(server, alice, org, { title: model });
    const posted = await server.request('post', `/conversations/${conversation.id}/messages`, { token: alice.token, body: { content: question } });
    expect(posted.status).to.equal(201);
    const started = await server.request('post', `/conversations/${conversation.id}/run`, { token: alice.token, body: { model } });
    expect(started.status, JSON.stringify(started.body)).to.equal(201);
    const id = started.body.run.id as string;
    const done = await eventually(`run ${id} ended`, async () => {
      const row = await db('chat_runs').where({ id }).first();
      return row.credits_charged !== null ? row : null;
    });
    const hold = await db('credit_holds').where({ id: done.hold_id }).first('status', 'amount', 'captured', 'released');
    const ledger = (await db('credit_ledger_entries').where({ hold_id: done.hold_id }).orderBy('seq').select('kind', 'amount')).map(
      (e) => `${e.kind}:${e.amount}`,
    );
    return { run: done, hold, ledger };
  }

  it('sandbox-chat is answered by the sandbox: the chat service receives nothing; held and billed at sandbox-chat prices', async () => {
    const question = 'Which lighthouse is the oldest in Portugal?';
    const before = upstream.requests.length;
    const { run, hold, ledger } = await runOn('sandbox-chat', question);
    expect(run.status, JSON.stringify(run.error)).to.equal('succeeded');
    const expected = sandboxAnswer({ model: 'sandbox-chat', messages: [{ role: 'user', content: question }] });
    expect(run.snapshot).to.equal(expected);
    expect(upstream.requests.slice(before)).to.deep.equal([]);
    // Held: the prompt and 1024 answer tokens at 1 and 2 credits per 1k → 3; charged: the sandbox's usage at the same prices.
    expect(hold.amount).to.equal(Math.ceil((tokens(question) * 1 + 1024 * 2) / 1000));
    const charged = Math.ceil((tokens(question) * 1 + tokens(expected) * 2) / 1000);
    expect(charged).to.equal(1);
    expect(hold).to.deep.equal({ status: 'captured', amount: 3, captured: 1, released: 2 });
    expect(run.credits_charged).to.equal(1);
    expect(ledger).to.deep.equal(['hold:3', 'capture:1', 'release:2']);
    expect(await reconcileCredits(stack.db, org)).to.deep.equal([]);
  });

  it('gpt-4o-mini is answered by the chat service: exactly one request, for that model; held and billed at gpt-4o-mini prices', async () => {
    const question = 'Which river runs through Porto?';
    const before = upstream.requests.length;
    const { run, hold, ledger } = await runOn('gpt-4o-mini', question);
    expect(run.status, JSON.stringify(run.error)).to.equal('succeeded');
    expect(run.snapshot).to.equal(UPSTREAM_ANSWER);
    expect(upstream.requests.slice(before)).to.deep.equal(['/v1/chat/completions']);
    const [sent, ...more] = received.slice(before);
    expect(more).to.deep.equal([]);
    expect(sent.model).to.equal('gpt-4o-mini');
    expect(sent.messages).to.deep.equal([{ role: 'user', content: question }]);
    // Held: the prompt and 1024 answer tokens at 1 and 4 credits per 1k → 5; charged: the reported usage → 3.
    expect(hold.amount).to.equal(Math.ceil((tokens(question) * 1 + 1024 * 4) / 1000));
    expect(hold).to.deep.equal({ status: 'captured', amount: 5, captured: 3, released: 2 });
    expect(run.credits_charged).to.equal(3);
    expect(ledger).to.deep.equal(['hold:5', 'capture:3', 'release:2']);
    expect(await reconcileCredits(stack.db, org)).to.deep.equal([]);
  });
});

describe('chat provider: routing by the model’s provider', () => {
  it('a request for a service this process has not configured is refused, naming the service', async () => {
    const chat = createChatProvider(testConfig());
    expect(chat.name).to.equal('routing');
    const messages = [{ role: 'user' as const, content: 'Hello?' }];
    const refused = await (async () => {
      for await (const _ of chat.stream({ model: 'gpt-4o-mini', provider: 'openai-compatible', messages }));
    })().then(
      () => null,
      (error: unknown) => error,
    );
    expect(refused).to.be.instanceOf(ChatProviderError);
    expect((refused as Error).message).to.equal('the openai-compatible chat service is not configured on this server');
    // The sandbox is always there.
    const chunks = [];
    for await (const chunk of chat.stream({ model: 'sandbox-chat', provider: 'sandbox', messages })) chunks.push(chunk);
    expect(
      chunks
        .filter((c) => 'delta' in c)
        .map((c) => (c as { delta: string }).delta)
        .join(''),
    ).to.equal(sandboxAnswer({ model: 'sandbox-chat', messages }));
  });
});

describe('chat runs: a worker configured without the model’s service', function () {
  this.timeout(60_000);
  let upstream: FakeUpstream;
  let server: TestServer;
  let worker: WorkerProcess;
  let db: Db;

  before(async () => {
    upstream = await startUpstream({ '/v1/chat/completions': (_req, res) => void res.writeHead(500).end() });
    const url = await isolatedDatabase();
    db = createDb(url, { max: 2 });
    // The web process knows the chat service and accepts gpt-4o-mini; the worker was started without it.
    server = await startTestServer({ CHAT_API_URL: upstream.url, CHAT_API_KEY: 'sk-test-routing' }, { databaseUrl: url });
    const config = testConfig({ WORKER_POLL_INTERVAL_SECONDS: '0.5' });
    worker = await startWorker(config, url, createLogger(config, 'test-worker'));
  });
  after(async () => {
    await worker?.stop();
    await server?.stop();
    await db?.destroy();
    await upstream?.close();
  });

  it('fails the run for good on its first attempt (no retry can help), with its hold released in full', async () => {
    const alice = newUser();
    const org = await createOrganization(server, alice);
    const conversation = await createConversation(server, alice, org, { title: 'misconfigured' });
    expect((await server.request('post', `/conversations/${conversation.id}/messages`, { token: alice.token, body: { content: 'Hello?' } })).status).to.equal(
      201,
    );
    const started = await server.request('post', `/conversations/${conversation.id}/run`, { token: alice.token, body: { model: 'gpt-4o-mini' } });
    expect(started.status, JSON.stringify(started.body)).to.equal(201);
    const id = started.body.run.id as string;
    const run = await eventually('the run ended', async () => {
      const row = await db('chat_runs').where({ id }).first();
      return row.status !== 'queued' && row.status !== 'running' ? row : null;
    });
    expect(run.status).to.equal('failed');
    expect(run.error).to.deep.include({ code: 'refused', message: 'the openai-compatible chat service is not configured on this server' });
    const hold = await db('credit_holds').where({ id: run.hold_id }).first('status', 'captured', 'released', 'amount');
    expect(hold).to.deep.equal({ status: 'released', captured: 0, released: hold.amount, amount: hold.amount });
    const attempts = await eventually('the attempt is recorded, ended', async () => {
      const rows = await db('job_attempts').where({ queue: 'conversation.chat-run.v1' }).select('attempt', 'outcome');
      return rows.every((row) => row.outcome !== null) && rows;
    });
    expect(attempts).to.deep.equal([{ attempt: 0, outcome: 'failed' }]);
    expect(upstream.requests).to.deep.equal([]);
    expect(await reconcileCredits(db, org)).to.deep.equal([]);
  });
});
