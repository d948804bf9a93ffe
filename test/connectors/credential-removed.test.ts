import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { expect } from 'chai';
import { z } from 'zod';
import type { Db } from '../../src/db/knex.ts';
import { eventually } from '../jobs/support.ts';
import { addMember, createConversation, createOrganization, newUser, type TestUser } from '../support/factories.ts';
import type { TestServer } from '../support/server.ts';
import { type Stack, startStack } from '../support/stack.ts';
import { readJson } from '../support/upstream.ts';

const BOBS_TOKEN = 'bobs-mcp-token-5678';

/** An MCP server on loopback wanting `Bearer BOBS_TOKEN`; it records every request's Authorization. */
async function startMcpServer() {
  const seen: (string | undefined)[] = [];
  const server = http.createServer(async (req, res) => {
    const body = req.method === 'POST' ? await readJson(req) : undefined;
    seen.push(req.headers.authorization);
    if (req.headers.authorization !== `Bearer ${BOBS_TOKEN}`) {
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
  return {
    port,
    url: `http://127.0.0.1:${port}/mcp`,
    seen,
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * Issue 36: a connector credential is its member's own. Bob sets his bearer secret and is removed:
 * it is erased with his cached tool list (re-added, he has none), and no later turn — Carol's, or
 * Bob's own after he returns — reaches the server with it.
 */
describe('connector credentials: the member removed', function () {
  this.timeout(60_000);
  let mcp: Awaited<ReturnType<typeof startMcpServer>>;
  let stack: Stack;
  let server: TestServer;
  let db: Db;
  let alice: TestUser;
  let bob: TestUser;
  let carol: TestUser;
  let org: string;
  let connectorId: string;

  before(async () => {
    mcp = await startMcpServer();
    const overrides = { OUTBOUND_ALLOWLIST: `127.0.0.1:${mcp.port}`, WORKER_POLL_INTERVAL_SECONDS: '0.5' };
    stack = await startStack(overrides);
    ({ server, db } = stack);
    [alice, bob, carol] = [newUser(), newUser(), newUser()];
    org = await createOrganization(server, alice);
    await addMember(db, org, bob);
    await addMember(db, org, carol);
    const created = await server.request('post', '/connectors', {
      token: alice.token,
      body: { organization_id: org, type: 'mcp', name: 'Calc Server', url: mcp.url, auth_scheme: 'bearer' },
    });
    expect(created.status, JSON.stringify(created.body)).to.equal(201);
    connectorId = created.body.connector.id;
  });
  after(async () => {
    await stack?.stop();
    await mcp?.close();
  });

  /** One turn of `user` calling the connector's tool; the tool message's content. */
  async function toolAnswer(user: TestUser) {
    const conversation = await createConversation(server, user, org, { title: 'MCP' });
    await server.request('post', `/conversations/${conversation.id}/messages`, {
      token: user.token,
      body: { content: '/tool calc_server__add {"a":2,"b":3}' },
    });
    const started = await server.request('post', `/conversations/${conversation.id}/run`, {
      token: user.token,
      body: { model: 'sandbox-chat', max_credits: 40 },
    });
    expect(started.status, JSON.stringify(started.body)).to.equal(201);
    await eventually('the turn finished', async () => (await db('chat_runs').where({ id: started.body.run.id }).first()).credits_charged !== null);
    const items = (await server.request('get', `/conversations/${conversation.id}/messages?limit=50`, { token: user.token })).body.items;
    return items.filter((m: { role: string }) => m.role === 'tool').map((m: { content: string }) => m.content);
  }

  it('is erased on removal; no later turn uses it', async () => {
    const set = await server.request('patch', `/connector-credentials/${connectorId}`, { token: bob.token, body: { secret: BOBS_TOKEN } });
    expect(set.status, JSON.stringify(set.body)).to.equal(200);
    expect(await toolAnswer(bob)).to.deep.equal(['sum=5']);
    expect(await db('connector_tool_lists').where({ connector_id: connectorId, user_id: bob.id })).to.have.length(1);

    const removed = await server.request('delete', `/organizations/${org}/members/${bob.id}`, { token: alice.token });
    expect(removed.status).to.equal(204);
    expect(await db('connector_credentials').where({ connector_id: connectorId })).to.deep.equal([]);
    expect(await db('connector_tool_lists').where({ connector_id: connectorId, user_id: bob.id })).to.deep.equal([]);
    const entry = await db('activity_events').where({ organization_id: org, action: 'member.removed', subject_id: bob.id }).first();
    expect(entry.data).to.include({ connector_credentials_erased: 1 });

    const reached = mcp.seen.length;
    // Carol's turn is not offered the connector (she has no credential; Bob's is never hers).
    expect(await toolAnswer(carol)).to.deep.equal(['Error: no tool named "calc_server__add" is offered in this turn']);
    // Bob back in the organization: his old secret did not come back with him.
    await addMember(db, org, bob);
    const status = await server.request('get', '/connector-credentials', { token: bob.token, query: { organization_id: org } });
    expect(status.status).to.equal(200);
    expect(status.body.items.map((c: { connector_id: string; set: boolean }) => [c.connector_id, c.set])).to.deep.equal([[connectorId, false]]);
    expect(await toolAnswer(bob)).to.deep.equal(['Error: no tool named "calc_server__add" is offered in this turn']);
    expect(mcp.seen.length).to.equal(reached);
  });
});
