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
import { createConversation, createOrganization, newUser, type TestUser } from '../support/factories.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { readJson } from '../support/upstream.ts';

const TOKEN = 'mcp-good-token-1234';
const APPROVAL_TTL_SECONDS = 8;

/** An MCP server (the SDK's, over Streamable HTTP, stateless) on loopback that wants `Authorization: Bearer TOKEN`. */
async function startMcpServer() {
  const seen: { authorization: string | undefined; method: string | undefined }[] = [];
  const server = http.createServer(async (req, res) => {
    const body = req.method === 'POST' ? await readJson(req) : undefined;
    seen.push({ authorization: req.headers.authorization, method: body?.method });
    if (req.headers.authorization !== `Bearer ${TOKEN}`) {
      res.writeHead(401, { 'content-type': 'application/json' });
      return void res.end(JSON.stringify({ error: 'invalid token' }));
    }
    const mcp = new McpServer({ name: 'calc', version: '1.0.0' });
    mcp.registerTool('add', { description: 'Adds two numbers', inputSchema: { a: z.number(), b: z.number() } }, async ({ a, b }) => ({
      content: [{ type: 'text', text: `sum=${a + b}` }],
    }));
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
  return { port, url: `http://127.0.0.1:${port}/mcp`, seen, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
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
    expect(res.body.tools).to.have.length(1);
    expect(res.body.tools[0]).to.include({ name: 'add', description: 'Adds two numbers' });
    expect(res.body.tools[0].input_schema.properties).to.have.keys(['a', 'b']);
    // Outsiders cannot see the connector.
    expect((await server.request('post', `/connectors/${connectorId}/refresh`, { token: bob.token })).status).to.equal(404);
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
});
