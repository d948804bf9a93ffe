import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { expect } from 'chai';
import { z } from 'zod';
import { reconcileCredits } from '../../src/credits/reconcile.ts';
import { createDb, type Db } from '../../src/db/knex.ts';
import { createLogger } from '../../src/platform/logger.ts';
import { startWorker, type WorkerProcess } from '../../workers/main.ts';
import { eventually, isolatedDatabase } from '../jobs/support.ts';
import { testConfig } from '../support/config.ts';
import { addMember, createConversation, createOrganization, newUser, type TestUser } from '../support/factories.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { readJson } from '../support/upstream.ts';

const TOKEN = 'mcp-good-token-1234';
const APPROVAL_TTL_SECONDS = 8;
const TOOL_TIMEOUT_MS = 3000;

/**
 * An MCP server (the SDK's, over Streamable HTTP, stateless) on loopback that wants `Authorization:
 * Bearer TOKEN` — but under `/open/` it wants nothing (a connector needing no credential).
 */
async function startMcpServer() {
  const seen: { authorization: string | undefined; method: string | undefined; tool: string | undefined; open: boolean }[] = [];
  /** Calls of `slow` hang until the test ends (their turn gives up on them at its time limit). */
  const hanging: (() => void)[] = [];
  const server = http.createServer(async (req, res) => {
    const body = req.method === 'POST' ? await readJson(req) : undefined;
    const open = req.url?.startsWith('/open/') ?? false;
    seen.push({ authorization: req.headers.authorization, method: body?.method, tool: body?.params?.name, open });
    if (!open && req.headers.authorization !== `Bearer ${TOKEN}`) {
      res.writeHead(401, { 'content-type': 'application/json' });
      return void res.end(JSON.stringify({ error: 'invalid token' }));
    }
    const mcp = new McpServer({ name: 'calc', version: '1.0.0' });
    mcp.registerTool('add', { description: 'Adds two numbers', inputSchema: { a: z.number(), b: z.number() } }, async ({ a, b }) => ({
      content: [{ type: 'text', text: `sum=${a + b}` }],
    }));
    mcp.registerTool('mul', { description: 'Multiplies two numbers', inputSchema: { a: z.number(), b: z.number() } }, async ({ a, b }) => ({
      content: [{ type: 'text', text: `product=${a * b}` }],
    }));
    mcp.registerTool('slow', { description: 'Never answers in time', inputSchema: {} }, async () => {
      await new Promise<void>((resolve) => hanging.push(resolve));
      return { content: [{ type: 'text', text: 'too late' }] };
    });
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on('close', () => {
      void transport.close();
      void mcp.close();
    });
    await mcp.connect(transport);
    await transport.handleRequest(req, res, body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    url: `http://127.0.0.1:${port}/mcp`,
    openUrl: `http://127.0.0.1:${port}/open/mcp`,
    seen,
    close: () => {
      for (const release of hanging) release();
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * MCP connectors as tool sources: the turn lists an MCP server's tools with the caller's credential
 * (through the SSRF guard: loopback is reached only because OUTBOUND_ALLOWLIST opens this port),
 * offers them namespaced and calls them; a wrong credential's 401 goes back to the model naming the
 * connector; a connector is never offered outside its organization.
 */
describe('chat turns: MCP connector tools', function () {
  this.timeout(60_000);
  let mcp: Awaited<ReturnType<typeof startMcpServer>>;
  let server: TestServer;
  let worker: WorkerProcess;
  let db: Db;
  let alice: TestUser;
  let bob: TestUser;
  let org: string;
  let otherOrg: string;
  let connectorId: string;

  before(async () => {
    mcp = await startMcpServer();
    const overrides = {
      OUTBOUND_ALLOWLIST: `127.0.0.1:${mcp.port}`,
      CHAT_APPROVAL_TTL_SECONDS: String(APPROVAL_TTL_SECONDS),
      CHAT_TOOL_TIMEOUT_MS: String(TOOL_TIMEOUT_MS),
      WORKER_POLL_INTERVAL_SECONDS: '0.5',
    };
    const url = await isolatedDatabase();
    db = createDb(url, { max: 4 });
    server = await startTestServer(overrides, { databaseUrl: url });
    worker = await startWorker(testConfig(overrides), url, createLogger(testConfig(overrides), 'test-worker'));
    alice = newUser();
    bob = newUser();
    org = await createOrganization(server, alice);
    otherOrg = await createOrganization(server, bob);
    const created = await server.request('post', '/connectors', {
      token: alice.token,
      body: { organization_id: org, type: 'mcp', name: 'Calc Server', url: mcp.url, auth_scheme: 'bearer' },
    });
    expect(created.status, JSON.stringify(created.body)).to.equal(201);
    connectorId = created.body.connector.id;
  });
  after(async () => {
    await worker?.stop();
    await server?.stop();
    await db?.destroy();
    await mcp?.close();
  });

  const setSecret = async (secret: string) =>
    expect((await server.request('patch', `/connector-credentials/${connectorId}`, { token: alice.token, body: { secret } })).status).to.equal(200);
  async function turn(user: TestUser, organizationId: string, content: string, body: Record<string, unknown> = {}) {
    const conversation = await createConversation(server, user, organizationId, { title: 'MCP' });
    await server.request('post', `/conversations/${conversation.id}/messages`, { token: user.token, body: { content } });
    const started = await server.request('post', `/conversations/${conversation.id}/run`, {
      token: user.token,
      body: { model: 'sandbox-chat', max_credits: 40, ...body },
    });
    return { conversationId: conversation.id as string, started };
  }
  const finishedBranch = async (user: TestUser, conversationId: string, runId: string) => {
    const run = await eventually('run finished', async () => {
      const row = await db('chat_runs').where({ id: runId }).first();
      return row.credits_charged !== null ? row : null;
    });
    const items = (await server.request('get', `/conversations/${conversationId}/messages?limit=50`, { token: user.token })).body.items;
    return { run, items };
  };

  it('refresh needs a credential (409); a turn lists the tools itself when nothing is cached, then calls one with the credential', async () => {
    const refused = await server.request('post', `/connectors/${connectorId}/refresh`, { token: alice.token });
    expect(refused.status).to.equal(409);
    expect(refused.body.data.issues[0].path).to.deep.equal(['credential']);
    await setSecret(TOKEN);
    expect(await db('connector_tool_lists').where({ connector_id: connectorId })).to.have.length(0);

    const { conversationId, started } = await turn(alice, org, '/tool calc_server__add {"a":2,"b":3}');
    expect(started.status, JSON.stringify(started.body)).to.equal(201);
    const { run, items } = await finishedBranch(alice, conversationId, started.body.run.id);
    expect(run.status).to.equal('succeeded');
    expect(items.map((m: any) => m.role)).to.deep.equal(['user', 'assistant', 'tool', 'assistant']);
    expect(items[2].content).to.equal('sum=5');
    // Listed by the turn, with Alice's secret, and cached for her.
    expect(mcp.seen.map((r) => r.method)).to.include.members(['initialize', 'tools/list', 'tools/call']);
    expect(mcp.seen.every((r) => r.authorization === `Bearer ${TOKEN}`)).to.equal(true);
    expect(await db('connector_tool_lists').where({ connector_id: connectorId, user_id: alice.id })).to.have.length(1);
  });

  it('POST /connectors/{id}/refresh lists the tools with the caller’s credential', async () => {
    const res = await server.request('post', `/connectors/${connectorId}/refresh`, { token: alice.token });
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    expect(res.body.tools.map((tool: any) => tool.name)).to.deep.equal(['add', 'mul', 'slow']);
    expect(res.body.tools[0]).to.include({ name: 'add', description: 'Adds two numbers' });
    expect(res.body.tools[0].input_schema.properties).to.have.keys(['a', 'b']);
    // Outsiders cannot see the connector.
    expect((await server.request('post', `/connectors/${connectorId}/refresh`, { token: bob.token })).status).to.equal(404);
  });

  it('a turn uses the cached list while it is fresh and lists the tools again once it is older than CHAT_CONNECTOR_TOOLS_TTL_SECONDS', async () => {
    const listings = () => mcp.seen.filter((r) => r.method === 'tools/list').length;
    const before = listings();
    const fresh = await turn(alice, org, '/tool calc_server__mul {"a":3,"b":4}');
    expect((await finishedBranch(alice, fresh.conversationId, fresh.started.body.run.id)).items[2].content).to.equal('product=12');
    expect(listings()).to.equal(before);
    // Older than the TTL (600 s by default): the next turn lists again, and caches what it found.
    await db('connector_tool_lists')
      .where({ connector_id: connectorId, user_id: alice.id })
      .update({ refreshed_at: db.raw(`now() - interval '1 hour'`) });
    const stale = await turn(alice, org, '/tool calc_server__mul {"a":5,"b":4}');
    expect((await finishedBranch(alice, stale.conversationId, stale.started.body.run.id)).items[2].content).to.equal('product=20');
    expect(listings()).to.equal(before + 1);
    const cached = await db('connector_tool_lists').where({ connector_id: connectorId, user_id: alice.id }).first();
    expect(Date.now() - new Date(cached.refreshed_at).getTime()).to.be.lessThan(60_000);
  });

  it('by default a turn offers the connectors the caller holds a credential for, and those needing none', async () => {
    const carol = newUser();
    await addMember(db, org, carol);
    const open = await server.request('post', '/connectors', {
      token: alice.token,
      body: { organization_id: org, type: 'mcp', name: 'Open Calc', url: mcp.openUrl, auth_scheme: 'none' },
    });
    expect(open.status, JSON.stringify(open.body)).to.equal(201);
    try {
      // Carol has no credential for "Calc Server": its tools are not offered to her; "Open Calc" needs none and is.
      const { conversationId, started } = await turn(carol, org, '/tool calc_server__add {"a":1,"b":1}\n/tool open_calc__add {"a":6,"b":7}');
      expect(started.status, JSON.stringify(started.body)).to.equal(201);
      const { run, items } = await finishedBranch(carol, conversationId, started.body.run.id);
      expect(run.status).to.equal('succeeded');
      expect(items.filter((m: any) => m.role === 'tool').map((m: any) => m.content)).to.deep.equal([
        'Error: no tool named "calc_server__add" is offered in this turn',
        'sum=13',
      ]);
      expect(mcp.seen.filter((r) => r.open).every((r) => r.authorization === undefined)).to.equal(true);
    } finally {
      expect((await server.request('delete', `/connectors/${open.body.connector.id}`, { token: alice.token })).status).to.equal(204);
    }
  });

  it(`a tool that does not answer within CHAT_TOOL_TIMEOUT_MS (${TOOL_TIMEOUT_MS} ms): its timeout goes back to the model, and the turn ends`, async () => {
    const { conversationId, started } = await turn(alice, org, '/tool calc_server__slow {}\n/tool calc_server__add {"a":1,"b":2}');
    const { run, items } = await finishedBranch(alice, conversationId, started.body.run.id);
    expect(run.status).to.equal('succeeded');
    expect(items.map((m: any) => m.role)).to.deep.equal(['user', 'assistant', 'tool', 'tool', 'assistant']);
    expect(items[2].content).to.equal(`Error: calc_server__slow: no answer within ${TOOL_TIMEOUT_MS} ms`);
    // The other call of the round ran beside it, not after it: asked second, it finished first.
    expect(items[3].content).to.equal('sum=3');
    const rows = await db('chat_tool_calls').where({ run_id: started.body.run.id }).orderBy('position');
    expect(rows.map((r) => r.name)).to.deep.equal(['calc_server__slow', 'calc_server__add']);
    expect(rows[1].finished_at.getTime()).to.be.lessThan(rows[0].finished_at.getTime());
    const calls = (await server.request('get', `/conversations/${conversationId}/run`, { token: alice.token })).body.run.tool_calls;
    expect(calls.map((c: any) => [c.name, c.status, c.credits])).to.deep.equal([
      ['calc_server__slow', 'failed', 0],
      ['calc_server__add', 'succeeded', 0],
    ]);
    expect(await reconcileCredits(db, org)).to.deep.equal([]);
  });

  it('a wrong credential: the 401, naming the connector, goes back to the model as the tool result and the turn ends', async () => {
    await setSecret('a-wrong-token-5678');
    const { conversationId, started } = await turn(alice, org, '/tool calc_server__add {"a":1,"b":1}');
    const { run, items } = await finishedBranch(alice, conversationId, started.body.run.id);
    expect(run.status).to.equal('succeeded');
    expect(items[2].content).to.match(/^Error: connector "Calc Server": the MCP server answered 401/);
    expect(items[3].role).to.equal('assistant');
    const failed = await server.request('post', `/connectors/${connectorId}/refresh`, { token: alice.token });
    expect(failed.status).to.equal(502);
    expect(failed.body.message).to.match(/connector "Calc Server": the MCP server answered 401/);
    await setSecret(TOKEN);
  });

  it('a connector’s tools are offered only in its organization', async () => {
    const narrowed = await turn(bob, otherOrg, '/tool calc_server__add {"a":1,"b":1}', { tools: ['calc_server__add'] });
    expect(narrowed.started.status).to.equal(400);
    expect(narrowed.started.body.data.issues[0].path).to.deep.equal(['tools', 0]);
    const { conversationId, started } = await turn(bob, otherOrg, '/tool calc_server__add {"a":1,"b":1}');
    const { items } = await finishedBranch(bob, conversationId, started.body.run.id);
    expect(items[2].content).to.equal('Error: no tool named "calc_server__add" is offered in this turn');
    // In its own organization the narrowed name is accepted.
    const own = await turn(alice, org, '/tool calc_server__add {"a":4,"b":4}', { tools: ['calc_server__add'] });
    expect(own.started.status).to.equal(201);
    expect((await finishedBranch(alice, own.conversationId, own.started.body.run.id)).items[2].content).to.equal('sum=8');
  });

  it('the SSRF guard: a connector whose address is not allowed is never reached', async () => {
    await db('connectors')
      .where({ id: connectorId })
      .update({ url: `http://127.0.0.1:${mcp.port + 1}/mcp` });
    const res = await server.request('post', `/connectors/${connectorId}/refresh`, { token: alice.token });
    expect(res.status).to.equal(502);
    expect(res.body.message).to.match(/connector "Calc Server": .*not allowed/);
    await db('connectors').where({ id: connectorId }).update({ url: mcp.url });
  });

  describe('approval (a connector that needs it)', () => {
    before(async () => {
      const marked = await server.request('patch', `/connectors/${connectorId}`, { token: alice.token, body: { needs_approval: true } });
      expect(marked.status, JSON.stringify(marked.body)).to.equal(200);
      expect(marked.body.connector.needs_approval).to.equal(true);
    });
    after(async () => {
      await server.request('patch', `/connectors/${connectorId}`, { token: alice.token, body: { needs_approval: false } });
    });

    const chatJobs = (runId: string) => db('pgboss.job').where({ name: 'conversation.chat-run.v1' }).whereRaw(`data->>'run_id' = ?`, [runId]).select('state');
    const runOf = async (conversationId: string) => (await server.request('get', `/conversations/${conversationId}/run`, { token: alice.token })).body.run;
    async function waiting(content: string) {
      const { conversationId, started } = await turn(alice, org, content);
      expect(started.status).to.equal(201);
      const run = await eventually('the turn waits for approval', async () => {
        const got = await runOf(conversationId);
        return got.status === 'awaiting_approval' ? got : null;
      });
      // No worker waits: the turn's only job has completed.
      expect((await chatJobs(run.id)).map((j) => j.state)).to.deep.equal(['completed']);
      expect(run.approval_expires_at).to.be.a('string');
      expect(run.tool_calls).to.have.length(1);
      expect(run.tool_calls[0]).to.include({ name: 'calc_server__add', status: 'awaiting_approval', credits: 0, message_id: null });
      return { conversationId, run };
    }
    const toolCallsSeen = () => mcp.seen.filter((r) => r.method === 'tools/call').length;

    it('approve: the call runs and the turn continues as a new job; the ledger is exact', async () => {
      const { conversationId, run } = await waiting('/tool calc_server__add {"a":2,"b":2}');
      const wrong = await server.request('post', `/conversations/${conversationId}/run/approvals`, {
        token: alice.token,
        body: { decisions: [{ tool_call_id: 'call_nope', approve: true }] },
      });
      expect(wrong.status).to.equal(400);
      expect(wrong.body.data.issues[0].path).to.deep.equal(['decisions', 0, 'tool_call_id']);
      const before = toolCallsSeen();
      const res = await server.request('post', `/conversations/${conversationId}/run/approvals`, {
        token: alice.token,
        body: { decisions: [{ tool_call_id: run.tool_calls[0].tool_call_id, approve: true }] },
      });
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
      expect(res.body.run.status).to.equal('running');
      expect(res.body.run.tool_calls[0].status).to.equal('running');
      const { run: done, items } = await finishedBranch(alice, conversationId, run.id);
      expect(done.status).to.equal('succeeded');
      expect(items[2].content).to.equal('sum=4');
      expect(toolCallsSeen()).to.equal(before + 1);
      expect((await chatJobs(run.id)).map((j) => j.state)).to.deep.equal(['completed', 'completed']);
      const again = await server.request('post', `/conversations/${conversationId}/run/approvals`, {
        token: alice.token,
        body: { decisions: [{ tool_call_id: run.tool_calls[0].tool_call_id, approve: true }] },
      });
      expect(again.status).to.equal(409);
      expect(await reconcileCredits(db, org)).to.deep.equal([]);
    });

    it('reject: the call never reaches the server; the model reads the rejection and the turn ends', async () => {
      const { conversationId, run } = await waiting('/tool calc_server__add {"a":3,"b":3}');
      const before = toolCallsSeen();
      const res = await server.request('post', `/conversations/${conversationId}/run/approvals`, {
        token: alice.token,
        body: { decisions: [{ tool_call_id: run.tool_calls[0].tool_call_id, approve: false }] },
      });
      expect(res.status).to.equal(200);
      const { run: done, items } = await finishedBranch(alice, conversationId, run.id);
      expect(done.status).to.equal('succeeded');
      expect(items[2].content).to.equal('Error: rejected by the user');
      expect(toolCallsSeen()).to.equal(before);
      expect((await runOf(conversationId)).tool_calls[0]).to.include({ status: 'failed', credits: 0 });
      expect(await reconcileCredits(db, org)).to.deep.equal([]);
    });

    it('expiry: unanswered, the turn is stopped, its hold settled (usage captured, the rest released) and the lock freed', async () => {
      const { conversationId, run } = await waiting('/tool calc_server__add {"a":5,"b":5}');
      const before = toolCallsSeen();
      const ended = await eventually(
        'the approval expired',
        async () => {
          const row = await db('chat_runs').where({ id: run.id }).first();
          return row.status === 'stopped' ? row : null;
        },
        { timeoutMs: (APPROVAL_TTL_SECONDS + 20) * 1000 },
      );
      expect((await db('conversations').where({ id: conversationId }).first()).active_run_id).to.equal(null);
      expect(toolCallsSeen()).to.equal(before);
      const got = await runOf(conversationId);
      expect(got.status).to.equal('stopped');
      expect(got.tool_calls[0]).to.include({ status: 'failed', credits: 0 });
      const hold = await db('credit_holds').where({ run_id: run.id }).first();
      expect(hold.status).to.not.equal('held');
      expect(hold.captured).to.equal(ended.credits_charged);
      expect(hold.captured + hold.released).to.equal(hold.amount);
      const late = await server.request('post', `/conversations/${conversationId}/run/approvals`, {
        token: alice.token,
        body: { decisions: [{ tool_call_id: run.tool_calls[0].tool_call_id, approve: true }] },
      });
      expect(late.status).to.equal(409);
      expect(await reconcileCredits(db, org)).to.deep.equal([]);
    });
  });
  describe('approval of one tool (approval_tools)', () => {
    before(async () => setSecret(TOKEN));
    after(async () => {
      await server.request('patch', `/connectors/${connectorId}`, { token: alice.token, body: { approval_tools: [] } });
    });

    it('only the named tool waits; the round’s other call runs at once; approve continues the turn with the ledger exact', async () => {
      const invalid = await server.request('patch', `/connectors/${connectorId}`, { token: alice.token, body: { approval_tools: ['has space'] } });
      expect(invalid.status).to.equal(400);
      expect(invalid.body.data.issues[0].path).to.deep.equal(['approval_tools', 0]);
      const marked = await server.request('patch', `/connectors/${connectorId}`, { token: alice.token, body: { approval_tools: ['add'] } });
      expect(marked.status, JSON.stringify(marked.body)).to.equal(200);
      expect(marked.body.connector).to.include({ needs_approval: false });
      expect(marked.body.connector.approval_tools).to.deep.equal(['add']);

      const callsOf = (tool: string) => mcp.seen.filter((r) => r.method === 'tools/call' && r.tool === tool).length;
      const [adds, muls] = [callsOf('add'), callsOf('mul')];
      const { conversationId, started } = await turn(alice, org, '/tool calc_server__add {"a":1,"b":9}\n/tool calc_server__mul {"a":2,"b":9}');
      expect(started.status).to.equal(201);
      const runOf = async () => (await server.request('get', `/conversations/${conversationId}/run`, { token: alice.token })).body.run;
      const waiting = await eventually('the turn waits for approval', async () => {
        const got = await runOf();
        return got.status === 'awaiting_approval' ? got : null;
      });
      expect(waiting.tool_calls.map((c: any) => [c.name, c.status])).to.deep.equal([
        ['calc_server__add', 'awaiting_approval'],
        ['calc_server__mul', 'succeeded'],
      ]);
      // Nothing reached the server for the waiting call.
      expect([callsOf('add'), callsOf('mul')]).to.deep.equal([adds, muls + 1]);
      const res = await server.request('post', `/conversations/${conversationId}/run/approvals`, {
        token: alice.token,
        body: { decisions: [{ tool_call_id: waiting.tool_calls[0].tool_call_id, approve: true }] },
      });
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
      const { run, items } = await finishedBranch(alice, conversationId, started.body.run.id);
      expect(run.status).to.equal('succeeded');
      expect(items.filter((m: any) => m.role === 'tool').map((m: any) => m.content)).to.deep.equal(['sum=10', 'product=18']);
      // Each ran once: add after its approval, mul not again when the turn went on.
      expect([callsOf('add'), callsOf('mul')]).to.deep.equal([adds + 1, muls + 1]);
      expect((await runOf()).tool_calls.map((c: any) => c.status)).to.deep.equal(['succeeded', 'succeeded']);
      expect(await reconcileCredits(db, org)).to.deep.equal([]);
    });
  });
});
