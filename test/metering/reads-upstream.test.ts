import type { IncomingMessage, ServerResponse } from 'node:http';
import { expect } from 'chai';
import { grantCredits } from '../../src/credits/ledger.ts';
import { reconcileCredits } from '../../src/credits/reconcile.ts';
import type { Db } from '../../src/db/knex.ts';
import { eventually } from '../jobs/support.ts';
import type { TestServer } from '../support/server.ts';
import { type Stack, startStack } from '../support/stack.ts';
import { createConversation, createOrganization, newUser, type TestUser } from '../support/factories.ts';
import { startUpstream, type FakeUpstream } from '../support/upstream.ts';

interface Held {
  operation: string;
  body: any;
  res: ServerResponse;
  closedEarly: boolean;
  answered: boolean;
}

/**
 * Metered reads racing the things that make billing hard, with the HTTP social adapter against a
 * fake social service on loopback whose answers the test releases: a stop of the chat turn while
 * its run-lock read is in flight, a caller hanging up, a provider that answers garbage or fails.
 */
describe('metered reads against a fake upstream: run-lock race, hang-up, provider failures', function () {
  this.timeout(60_000);
  let stack: Stack;
  let server: TestServer;
  let upstream: FakeUpstream;
  let db: Db;
  let alice: TestUser;
  let org: string;
  const held: Held[] = [];
  /** How the upstream answers, by the input's username. */
  const behaviour: Record<string, (req: IncomingMessage, res: ServerResponse, body: any) => void> = {
    broken: (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"result": {"username": "broken"}, "pages": 1}'); // no summary: fails the output schema
    },
    down: (_req, res) => {
      res.writeHead(500, { 'content-type': 'application/json' });
      res.end('{"error": "down"}');
    },
  };

  // The fake social service: usernames with a behaviour are answered by it; the others are held until `answer`.
  function fakeSocialService(req: IncomingMessage, res: ServerResponse) {
    let text = '';
    req.on('data', (chunk) => (text += chunk));
    req.on('end', () => {
      const body = JSON.parse(text);
      const special = behaviour[body.input.username];
      if (special) return special(req, res, body);
      const entry: Held = { operation: req.url!.split('/').at(-1)!, body, res, closedEarly: false, answered: false };
      res.on('close', () => (entry.closedEarly = !entry.answered));
      held.push(entry);
    });
  }

  before(async () => {
    upstream = await startUpstream({ '/v1/social/net2_profile': fakeSocialService });
    const overrides = { WORKER_POLL_INTERVAL_SECONDS: '0.5', READ_TIMEOUT_MS: '20000', CHAT_SANDBOX_DELAY_MS: '400' };
    stack = await startStack(overrides, { SOCIAL_API_URL: upstream.url, SOCIAL_API_KEY: 'sk-social-test' });
    ({ server, db } = stack);
    alice = newUser();
    org = await createOrganization(server, alice);
    await db.transaction((trx) => grantCredits(trx, { organizationId: org, source: 'purchase', amount: 1000, description: 'Test credits' }));
  });
  after(async () => {
    for (const h of held) h.res.destroy();
    await stack?.stop();
    await upstream?.close();
  });

  const answer = (entry: Held) => {
    entry.answered = true;
    entry.res.writeHead(200, { 'content-type': 'application/json' });
    entry.res.end(
      JSON.stringify({
        result: { username: entry.body.input.username, followers_count: 7, summary: `@${entry.body.input.username} has 7 followers` },
        pages: 1,
      }),
    );
  };
  const heldFor = (username: string) =>
    eventually(`the upstream holds a request for ${username}`, async () => held.find((h) => h.body.input.username === username));
  const callOf = async (toolCallId: string) => db('metered_calls').where({ tool_call_id: toolCallId }).first();
  const holdOf = (callId: string) =>
    db('credit_holds')
      .where({ run_id: `metered-call:${callId}` })
      .first('status', 'amount', 'captured', 'released');
  const read = (body: Record<string, unknown>) =>
    server.request('post', '/social/net2_profile', { token: alice.token, body: { organization_id: org, ...body } });

  it('the HTTP adapter carries the input and the key; the answer is validated and billed', async () => {
    const pending = read({ input: { username: 'grace' }, tool_call_id: 'plain' });
    const request = await heldFor('grace');
    expect(request.body).to.deep.equal({ input: { username: 'grace' }, max_pages: 1 });
    answer(request);
    const res = await pending;
    expect(res.status).to.equal(200);
    expect(res.body).to.deep.equal({
      operation: 'net2_profile',
      result: { username: 'grace', followers_count: 7, summary: '@grace has 7 followers' },
      requests: 1,
      credits_charged: 1,
    });
  });

  it('run_lock: a read racing a stop of its turn is refused (409) and not billed; after the stop it is refused at once', async () => {
    const conversation = await createConversation(server, alice, org, { title: 'Agent' });
    await server.request('post', `/conversations/${conversation.id}/messages`, { token: alice.token, body: { content: 'Look up @linus for me.' } });
    const run = await server.request('post', `/conversations/${conversation.id}/run`, { token: alice.token, body: { model: 'sandbox-chat' } });
    expect(run.status).to.equal(201);
    const terms = { conversation_id: conversation.id, run_lock: true };

    const pending = read({ input: { username: 'linus' }, tool_call_id: 'racing', ...terms });
    const request = await heldFor('linus');
    const call = await callOf('racing');
    expect(call).to.include({ status: 'running', run_lock: true, chat_run_id: run.body.run.id });
    expect(await holdOf(call.id)).to.include({ status: 'held', amount: 1 });

    expect((await server.request('delete', `/conversations/${conversation.id}/run`, { token: alice.token })).status).to.equal(204);
    answer(request); // the provider answers after the stop
    const res = await pending;
    expect(res.status).to.equal(409);
    expect(res.body.code).to.equal('conflict');
    expect(res.body.data.issues[0].path).to.deep.equal(['run_lock']);
    expect(await callOf('racing')).to.include({ status: 'refused', credits_charged: 0 });
    expect(await holdOf(call.id)).to.deep.equal({ status: 'released', amount: 1, captured: 0, released: 1 });

    const late = await read({ input: { username: 'linus' }, tool_call_id: 'late', ...terms });
    expect(late.status).to.equal(409);
    expect(late.body.message).to.match(/^run_lock: /);
    expect(await callOf('late')).to.equal(undefined);
  });

  it('a caller who hangs up leaves no hold behind, and the provider call is aborted', async () => {
    const controller = new AbortController();
    const pending = fetch(`${server.url}/social/net2_profile`, {
      method: 'POST',
      headers: { authorization: `Bearer ${alice.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ organization_id: org, input: { username: 'hangup' }, tool_call_id: 'hangup' }),
      signal: controller.signal,
    }).catch((error: Error) => error);
    const request = await heldFor('hangup');
    controller.abort();
    expect(await pending).to.be.instanceOf(Error);
    const call = await eventually('the call was canceled', async () => {
      const row = await callOf('hangup');
      return row.status === 'canceled' ? row : null;
    });
    expect(call).to.deep.include({ credits_charged: 0, error: { code: 'canceled', message: 'the caller hung up' } });
    expect(await holdOf(call.id)).to.deep.equal({ status: 'released', amount: 1, captured: 0, released: 1 });
    await eventually('the worker closed its upstream request', async () => request.closedEarly);
  });

  it('a malformed answer is 502 and an upstream that keeps failing is 502: nothing charged', async () => {
    const before = await db('credit_balances').where({ organization_id: org }).first('captured');
    const broken = await read({ input: { username: 'broken' } });
    expect(broken.status).to.equal(502);
    expect(broken.body.message).to.equal(
      'net2_profile: the provider answered a malformed result (result.summary: Invalid input: expected string, received undefined); nothing was charged',
    );
    const down = await read({ input: { username: 'down' } });
    expect(down.status).to.equal(502);
    expect(down.body.code).to.equal('upstream_failed');
    expect(await db('credit_balances').where({ organization_id: org }).first('captured')).to.deep.equal(before);
    expect(await db('credit_holds').where({ organization_id: org, status: 'held' }).whereNot('reason', 'chat_run')).to.have.length(0);
    expect(await reconcileCredits(db, org)).to.deep.equal([]);
  });
});
