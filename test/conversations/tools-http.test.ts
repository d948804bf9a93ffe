import type { IncomingMessage, ServerResponse } from 'node:http';
import { expect } from 'chai';
import { countTokens } from 'gpt-tokenizer';
import { toolsTokens } from '../../src/conversations/context/window.ts';
import { reconcileCredits } from '../../src/credits/reconcile.ts';
import { createDb, type Db } from '../../src/db/knex.ts';
import { createLogger } from '../../src/platform/logger.ts';
import { startWorker, type WorkerProcess } from '../../workers/main.ts';
import { eventually, isolatedDatabase } from '../jobs/support.ts';
import { testConfig } from '../support/config.ts';
import { createConversation, createOrganization, newUser, type TestUser } from '../support/factories.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { type FakeUpstream, json, readJson, startUpstream } from '../support/upstream.ts';

const MAX_ROUNDS = 2;
/** The model the turns run on: a catalog model of the HTTP service (CHAT_API_URL), so the adapter is what streams. */
const MODEL = 'gpt-4o-mini';
/** Reported for every answer: 1000 × 1 + 500 × 4 per 1k at gpt-4o-mini prices → 3 credits a round. */
const USAGE = { prompt_tokens: 1000, completion_tokens: 500 };

const event = (body: unknown) => `data: ${JSON.stringify(body)}\n\n`;
const piece = (delta: unknown) => event({ choices: [{ index: 0, delta }] });

/** What the fake model does, by the scenario word the conversation's question starts with. */
const plans: Record<string, { id: string; name: string; args: string }[]> = {
  one: [{ id: 'call_a', name: 'search', args: '{"query":"one"}' }],
  parallel: [
    { id: 'call_a', name: 'search', args: '{"query":"left"}' },
    { id: 'call_b', name: 'search', args: '{"query":"right","limit":20}' },
  ],
  fail: [
    { id: 'call_a', name: 'search', args: '{"query":"refuse me"}' },
    { id: 'call_b', name: 'search', args: '{"query":' },
  ],
  loop: [{ id: 'call_same', name: 'search', args: '{"query":"again"}' }],
  stop: [{ id: 'call_a', name: 'search', args: '{"query":"slow"}' }],
  budget: [{ id: 'call_a', name: 'search', args: '{"query":"wide","limit":50}' }],
  grow: [{ id: 'call_big', name: 'search', args: '{"query":"big"}' }],
};

/** A request's size as the model counts it (OpenAI's framing: 3 tokens a message, 3 priming the reply), the tools it offers included. */
const requestTokens = (body: any) =>
  body.messages.reduce((sum: number, { role, content, ...rest }: any) => {
    const extra = Object.keys(rest).length > 0 ? countTokens(JSON.stringify(rest)) : 0;
    return sum + 3 + countTokens(role) + countTokens(content ?? '') + extra;
  }, 3) + toolsTokens((body.tools ?? []).map(({ function: { name, description, parameters } }: any) => ({ name, description, parameters })));

/**
 * Tool calls through the OpenAI-compatible HTTP adapter, against a fake chat service on loopback
 * that asks for tools in streamed fragments (and a fake search service behind the billed `search`
 * tool): one tool, parallel tools, failing tools, the round limit, a stop while a paid call runs,
 * and `max_credits` reached mid-turn — each with the ledger exact.
 */
describe('chat turns: tool calls through the HTTP chat adapter', function () {
  this.timeout(60_000);
  let chat: FakeUpstream;
  let search: FakeUpstream;
  let server: TestServer;
  let worker: WorkerProcess;
  let db: Db;
  let alice: TestUser;
  let org: string;
  const bodies: any[] = [];
  const held: ServerResponse[] = [];

  const answerChat = async (req: IncomingMessage, res: ServerResponse) => {
    const body = await readJson(req);
    bodies.push(body);
    const scenario = String(body.messages.find((m: any) => m.role === 'user')?.content ?? '').split(' ')[0]!;
    const last = body.messages.at(-1);
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    const asks = body.tools && (last.role === 'user' || scenario === 'loop' || scenario === 'grow') ? plans[scenario] : undefined;
    if (asks) {
      res.write(piece({ role: 'assistant', content: null }));
      // Each call in two fragments (id and name, then the arguments split), the calls interleaved.
      for (const [index, call] of asks.entries())
        res.write(piece({ tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.name, arguments: '' } }] }));
      for (const [index, call] of asks.entries()) {
        const half = Math.floor(call.args.length / 2);
        res.write(piece({ tool_calls: [{ index, function: { arguments: call.args.slice(0, half) } }] }));
        res.write(piece({ tool_calls: [{ index, function: { arguments: call.args.slice(half) } }] }));
      }
    } else {
      const results = body.messages.filter((m: any) => m.role === 'tool').length;
      for (const word of `Done after ${results} results.`.split(/(?<= )/)) res.write(piece({ content: word }));
    }
    res.write(event({ choices: [], usage: USAGE }));
    res.end('data: [DONE]\n\n');
  };
  const answerSearch = async (req: IncomingMessage, res: ServerResponse) => {
    const body = await readJson(req);
    if (body.query === 'refuse me') return json(res, 400, { error: 'query refused' });
    if (body.query === 'slow') return void held.push(res);
    // Ten long snippets: one result is about as large as the small model's whole window.
    if (body.query === 'big')
      return json(res, 200, {
        results: Array.from({ length: 10 }, (_, i) => ({
          title: `Big ${i}`,
          url: `https://example.com/big/${i}`,
          snippet: Array.from({ length: 260 }, (_, w) => `w${i}x${w}`).join(' '),
        })),
      });
    json(res, 200, { results: [{ title: `About ${body.query}`, url: `https://example.com/${encodeURIComponent(body.query)}` }] });
  };

  before(async () => {
    chat = await startUpstream({ '/v1/chat/completions': (req, res) => void answerChat(req, res) });
    search = await startUpstream({ '/v1/search': (req, res) => void answerSearch(req, res) });
    const overrides = {
      CHAT_API_URL: chat.url,
      SEARCH_API_URL: search.url,
      CHAT_TOOL_MAX_ROUNDS: String(MAX_ROUNDS),
      WORKER_POLL_INTERVAL_SECONDS: '0.5',
    };
    const url = await isolatedDatabase();
    db = createDb(url, { max: 4 });
    server = await startTestServer(overrides, { databaseUrl: url });
    worker = await startWorker(testConfig(overrides), url, createLogger(testConfig(overrides), 'test-worker'));
    alice = newUser();
    org = await createOrganization(server, alice);
  });
  after(async () => {
    for (const res of held) res.destroy();
    await worker?.stop();
    await server?.stop();
    await db?.destroy();
    await chat?.close();
    await search?.close();
  });

  async function turn(scenario: string, body: Record<string, unknown> = { max_credits: 60 }) {
    const conversation = await createConversation(server, alice, org, { title: scenario });
    const question = `${scenario} ${conversation.id}`;
    const posted = await server.request('post', `/conversations/${conversation.id}/messages`, { token: alice.token, body: { content: question } });
    expect(posted.status).to.equal(201);
    const started = await server.request('post', `/conversations/${conversation.id}/run`, { token: alice.token, body: { model: MODEL, ...body } });
    expect(started.status, JSON.stringify(started.body)).to.equal(201);
    return { conversationId: conversation.id as string, question, runId: started.body.run.id as string, holdId: started.body.run.hold_id };
  }
  const finished = (id: string) =>
    eventually(`run ${id} finished`, async () => {
      const row = await db('chat_runs').where({ id }).first();
      return row.credits_charged !== null ? row : null;
    });
  const requestsOf = (question: string) => bodies.filter((b) => b.messages.some((m: any) => m.role === 'user' && m.content === question));
  const branch = async (conversationId: string) =>
    (await server.request('get', `/conversations/${conversationId}/messages?limit=50`, { token: alice.token })).body.items as any[];
  const runOf = async (conversationId: string) => (await server.request('get', `/conversations/${conversationId}/run`, { token: alice.token })).body.run;
  const readsOf = (conversationId: string) => db('metered_calls').where({ conversation_id: conversationId }).whereNot({ operation: 'chat_run' });
  const turnCapture = async (runId: string) => {
    const hold = await db('credit_holds').where({ run_id: runId }).first();
    return hold;
  };

  it('one tool: the adapter sends the tools, assembles the streamed call, and sends the round back in the chat-completions shape', async () => {
    const { conversationId, question, runId } = await turn('one');
    const done = await finished(runId);
    expect(done.status).to.equal('succeeded');
    const [first, second, ...more] = requestsOf(question);
    expect(more).to.deep.equal([]);
    const searchTool = first.tools.find((t: any) => t.function.name === 'search');
    expect(searchTool.type).to.equal('function');
    expect(searchTool.function.parameters.properties.query).to.be.an('object');
    expect(first.tools.map((t: any) => t.function.name)).to.include.members(['search', 'read_url', 'search_assets', 'generate_image']);
    // Every social operation of the one catalog is offered, its input schema the catalog's.
    const catalog = await server.request('get', `/social/operations?organization_id=${org}`, { token: alice.token });
    expect(catalog.status).to.equal(200);
    expect(catalog.body.operations.length).to.be.greaterThan(0);
    for (const operation of catalog.body.operations) {
      const offered = first.tools.find((t: any) => t.function.name === operation.name);
      expect(offered, operation.name).to.not.equal(undefined);
      expect(offered.function.parameters).to.deep.equal(operation.input_schema);
    }
    // The second request carries the round: the assistant's call, then the tool's result.
    expect(second.messages.slice(-2)).to.deep.equal([
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_a', type: 'function', function: { name: 'search', arguments: '{"query":"one"}' } }] },
      { role: 'tool', tool_call_id: 'call_a', content: second.messages.at(-1).content },
    ]);
    expect(JSON.parse(second.messages.at(-1).content).results[0].title).to.equal('About one');
    const items = await branch(conversationId);
    expect(items.map((m) => m.role)).to.deep.equal(['user', 'assistant', 'tool', 'assistant']);
    expect(items[3].content).to.equal('Done after 1 results.');
    // Two rounds of the model (3 credits each) and the read (2): the turn's capture is the model's.
    expect(done.credits_charged).to.equal(6);
    expect((await runOf(conversationId)).tool_calls).to.deep.equal([
      {
        tool_call_id: 'call_a',
        name: 'search',
        round: 1,
        status: 'succeeded',
        arguments: '{"query":"one"}',
        credits: 2,
        message_id: items[2].id,
        approved: null,
        decided_by_id: null,
        decided_at: null,
      },
    ]);
    expect(await reconcileCredits(db, org)).to.deep.equal([]);
  });

  it('parallel tools: both calls of the round run, each billed once with its own tool_call_id', async () => {
    const { conversationId, runId } = await turn('parallel');
    await finished(runId);
    const items = await branch(conversationId);
    expect(items.map((m) => m.role)).to.deep.equal(['user', 'assistant', 'tool', 'tool', 'assistant']);
    expect(items.slice(2, 4).map((m) => m.tool_call_id)).to.deep.equal(['call_a', 'call_b']);
    expect(items[4].content).to.equal('Done after 2 results.');
    const reads = await readsOf(conversationId);
    expect(reads.map((r) => [r.tool_call_id, r.status, r.credits_charged]).sort()).to.deep.equal([
      ['call_a', 'succeeded', 2],
      // 20 results are two pages: 1 + 2.
      ['call_b', 'succeeded', 3],
    ]);
    expect(await reconcileCredits(db, org)).to.deep.equal([]);
  });

  it('failing tools: a refused read and malformed arguments go back to the model as results; nothing is charged for them', async () => {
    const { conversationId, question, runId } = await turn('fail');
    const done = await finished(runId);
    expect(done.status).to.equal('succeeded');
    const results = requestsOf(question)[1].messages.filter((m: any) => m.role === 'tool');
    expect(results[0].content).to.match(/^Error: search: search service answered 400.*\(refused\); nothing was charged$/);
    expect(results[1].content).to.equal('Error: arguments: are not valid JSON');
    const reads = await readsOf(conversationId);
    expect(reads.map((r) => [r.status, r.credits_charged])).to.deep.equal([['failed', 0]]);
    expect((await runOf(conversationId)).tool_calls.map((c: any) => [c.status, c.credits])).to.deep.equal([
      ['failed', 0],
      ['failed', 0],
    ]);
    expect(await reconcileCredits(db, org)).to.deep.equal([]);
  });

  it(`max rounds: after ${MAX_ROUNDS} tool rounds the model is asked once more without tools, and that is the answer`, async () => {
    const { conversationId, question, runId } = await turn('loop');
    const done = await finished(runId);
    expect(done.status).to.equal('succeeded');
    const requests = requestsOf(question);
    expect(requests.map((r) => Boolean(r.tools))).to.deep.equal([true, true, false]);
    const items = await branch(conversationId);
    expect(items.map((m) => m.role)).to.deep.equal(['user', 'assistant', 'tool', 'assistant', 'tool', 'assistant']);
    expect(items.at(-1).content).to.equal('Done after 2 results.');
    // The model reused its call id in round 2: both calls are recorded, one per round.
    expect((await runOf(conversationId)).tool_calls.map((c: any) => [c.tool_call_id, c.round])).to.deep.equal([
      ['call_same', 1],
      ['call_same', 2],
    ]);
    expect(await reconcileCredits(db, org)).to.deep.equal([]);
  });

  it('stop during a paid tool call: the turn ends at once; the read, answering later, is refused by the run lock and charged nothing', async () => {
    const { conversationId, runId } = await turn('stop', { max_credits: 30 });
    const call = await eventually('the read is running', async () => (await readsOf(conversationId)).find((r) => r.status === 'running' && held.length > 0));
    const stop = await server.request('delete', `/conversations/${conversationId}/run`, { token: alice.token });
    expect(stop.status).to.equal(204);
    const run = await db('chat_runs').where({ id: runId }).first();
    expect(run.status).to.equal('stopped');
    expect((await db('conversations').where({ id: conversationId }).first()).active_run_id).to.equal(null);
    expect((await runOf(conversationId)).tool_calls.map((c: any) => c.status)).to.deep.equal(['failed']);

    // The search service answers now: the read's result is not billed (its turn no longer holds the lock).
    const res = held.shift()!;
    json(res, 200, { results: [{ title: 'Late', url: 'https://example.com/late' }] });
    const settled = await eventually('the read settled', async () => {
      const row = await db('metered_calls').where({ id: call.id }).first();
      return row.status !== 'running' && row.status !== 'queued' ? row : null;
    });
    expect(settled).to.include({ status: 'refused', credits_charged: 0 });
    expect(settled.error.code).to.equal('run_lock');
    const readHold = await db('credit_holds')
      .where({ run_id: `metered-call:${call.id}` })
      .first();
    expect(readHold).to.include({ status: 'released', captured: 0 });
    // The turn's hold: captured once (the first round), the rest released.
    const turnHold = await turnCapture(runId);
    expect(turnHold).to.include({ captured: run.credits_charged, released: 30 - run.credits_charged });
    const captures = await db('credit_ledger_entries').where({ organization_id: org, kind: 'capture' }).whereIn('hold_id', [turnHold.id, readHold.id]);
    expect(captures.map((c) => c.hold_id)).to.deep.equal(captures.length ? [turnHold.id] : []);
    expect(await reconcileCredits(db, org)).to.deep.equal([]);
  });

  it('tool results past a small model’s window: every request of the turn, rounds included, fits the window', async () => {
    // A catalog model of the HTTP service with a 3000-token window and 200-token answers.
    await db('chat_models').insert({
      id: 'tiny-tools',
      provider: 'openai-compatible',
      name: 'Tiny with tools',
      context_window: 3000,
      input_credits_per_1k_tokens: 1,
      output_credits_per_1k_tokens: 1,
    });
    const copy = await server.request('put', '/chat-models/tiny-tools/copy', {
      token: alice.token,
      body: { organization_id: org, enabled: true, default_parameters: { max_tokens: 200 } },
    });
    expect(copy.status, JSON.stringify(copy.body)).to.equal(200);
    const { conversationId, question, runId } = await turn('grow', { model: 'tiny-tools', max_credits: 60 });
    const done = await finished(runId);
    expect(done.status).to.equal('succeeded');
    const requests = requestsOf(question);
    // Two tool rounds, then the answer without tools.
    expect(requests.map((r) => Boolean(r.tools))).to.deep.equal([true, true, false]);
    const items = await branch(conversationId);
    expect(items.map((m) => m.role)).to.deep.equal(['user', 'assistant', 'tool', 'assistant', 'tool', 'assistant']);
    // Each stored result alone is larger than the window…
    for (const result of [items[2], items[4]]) expect(countTokens(result.content)).to.be.greaterThan(3000);
    // …yet every request, with its tools and the answer's room, fits: the results were cut to their budget.
    for (const request of requests) {
      expect(request.max_tokens).to.equal(200);
      expect(requestTokens(request) + request.max_tokens).to.be.at.most(3000);
    }
    const lastResults = requests[2].messages.filter((m: any) => m.role === 'tool');
    expect(lastResults).to.have.length(2);
    for (const result of lastResults) expect(result.content).to.match(/\[… cut to fit the context window: \d+ of \d+ tokens kept …\]/);
    expect(requests[2].messages.find((m: any) => m.role === 'user').content).to.equal(question);
    expect(await reconcileCredits(db, org)).to.deep.equal([]);
  });

  it('max_credits reached mid-turn: a paid call that does not fit is not made (the model reads why), and the turn stays within it', async () => {
    const { conversationId, question, runId } = await turn('budget', { max_credits: 5 });
    const done = await finished(runId);
    expect(done.status).to.equal('succeeded');
    const result = requestsOf(question)[1].messages.at(-1);
    expect(result.content).to.equal(
      'Error: max_credits: search may cost 6 credits and the turn has 2 of its 5 left; the call was not made and nothing was charged',
    );
    expect(await readsOf(conversationId)).to.deep.equal([]);
    // Two rounds of the model use 6 credits: the capture stops at max_credits.
    expect(done.credits_charged).to.equal(5);
    expect(await reconcileCredits(db, org)).to.deep.equal([]);
  });
});
