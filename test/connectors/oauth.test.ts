import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { openAccessToken } from '../../src/connectors/oauth/connections.ts';
import { reencryptOAuthSecrets } from '../../src/connectors/oauth/reencrypt.ts';
import { oauthBearer } from '../../src/connectors/oauth/tokens.ts';
import { keyringOf, resolveKeyring } from '../../src/connectors/secrets.ts';
import type { ConnectorRow } from '../../src/connectors/index.ts';
import { reconcileCredits } from '../../src/credits/reconcile.ts';
import type { Db } from '../../src/db/knex.ts';
import { eventually } from '../jobs/support.ts';
import { testConfig } from '../support/config.ts';
import { addMember, createConversation, createOrganization, newUser, type TestUser } from '../support/factories.ts';
import type { TestServer } from '../support/server.ts';
import { type Stack, startStack } from '../support/stack.ts';
import {
  type AuthorizationServer,
  authorizeInBrowser,
  MACHINE_CLIENT,
  type OAuthMcpServer,
  startAuthorizationServer,
  startOAuthMcpServer,
} from './oauth-peers.ts';

/**
 * MCP connectors that authorize with OAuth 2.1 as the MCP authorization spec says, against real
 * peers on loopback: oidc-provider as the authorization server and the SDK's MCP server validating
 * tokens by introspection. The test is the member's browser. OUTBOUND_ALLOWLIST opens exactly the
 * two peers' ports: any other loopback or private address the flow meets is refused.
 */
describe('connectors: OAuth connections (MCP authorization)', function () {
  this.timeout(90_000);
  let as: AuthorizationServer;
  let mcp: OAuthMcpServer;
  let stack: Stack;
  let server: TestServer;
  let db: Db;
  let overrides: Record<string, string>;
  let alice: TestUser;
  let carol: TestUser;
  let org: string;
  let connectorId: string;
  /** A server (allowlisted) whose discovery documents point wherever `pointers` say. */
  let lure: http.Server;
  let lureUrl: string;
  const pointers = { resourceMetadata: '', authorizationServer: '', tokenEndpoint: '' };

  before(async () => {
    as = await startAuthorizationServer(() => mcp.url);
    mcp = await startOAuthMcpServer(() => as);
    lure = http.createServer((req, res) => {
      const json = (body: unknown) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
      if (req.url === '/prm') return json({ resource: `${lureUrl}/mcp`, authorization_servers: [pointers.authorizationServer] });
      if (req.url === '/.well-known/oauth-authorization-server')
        return json({
          issuer: lureUrl,
          authorization_endpoint: `${lureUrl}/authorize`,
          token_endpoint: pointers.tokenEndpoint,
          response_types_supported: ['code'],
          code_challenge_methods_supported: ['S256'],
        });
      res.writeHead(401, { 'www-authenticate': `Bearer resource_metadata="${pointers.resourceMetadata}"` }).end();
    });
    await new Promise<void>((resolve) => lure.listen(0, '127.0.0.1', resolve));
    lureUrl = `http://127.0.0.1:${(lure.address() as AddressInfo).port}`;
    overrides = {
      OUTBOUND_ALLOWLIST: `127.0.0.1:${as.port},127.0.0.1:${mcp.port},127.0.0.1:${(lure.address() as AddressInfo).port}`,
      WORKER_POLL_INTERVAL_SECONDS: '0.5',
    };
    stack = await startStack(overrides);
    ({ server, db } = stack);
    alice = newUser();
    carol = newUser();
    org = await createOrganization(server, alice);
    await addMember(db, org, carol);
    const created = await server.request('post', '/connectors', {
      token: alice.token,
      body: { organization_id: org, type: 'mcp', name: 'Tracker', url: mcp.url, auth_scheme: 'oauth' },
    });
    expect(created.status, JSON.stringify(created.body)).to.equal(201);
    connectorId = created.body.connector.id;
  });
  after(async () => {
    await stack?.stop();
    await mcp?.close();
    await as?.close();
    lure?.closeAllConnections();
    await new Promise<void>((resolve) => (lure ? lure.close(() => resolve()) : resolve()));
  });

  async function turn(user: TestUser, content: string) {
    const conversation = await createConversation(server, user, org, { title: 'OAuth' });
    await server.request('post', `/conversations/${conversation.id}/messages`, { token: user.token, body: { content } });
    const started = await server.request('post', `/conversations/${conversation.id}/run`, {
      token: user.token,
      body: { model: 'sandbox-chat', max_credits: 40 },
    });
    expect(started.status, JSON.stringify(started.body)).to.equal(201);
    const run = await eventually('run finished', async () => {
      const row = await db('chat_runs').where({ id: started.body.run.id }).first();
      return row.credits_charged !== null ? row : null;
    });
    const items = (await server.request('get', `/conversations/${conversation.id}/messages?limit=50`, { token: user.token })).body.items;
    const calls = await db('chat_tool_calls').where({ run_id: run.id }).orderBy('position');
    return { run, items, calls, toolResult: items.find((m: { role: string }) => m.role === 'tool')?.content as string | undefined };
  }
  const connection = async (user: TestUser, id = connectorId) => server.request('get', `/connectors/${id}/oauth/connection`, { token: user.token });
  async function connect(user: TestUser, account: string, id = connectorId) {
    const started = await server.request('post', `/connectors/${id}/oauth/authorize`, { token: user.token });
    expect(started.status, JSON.stringify(started.body)).to.equal(200);
    return { started: started.body.authorization, ...(await authorizeInBrowser(started.body.authorization.authorization_url, account, server.url)) };
  }
  const refreshes = () => as.grants.filter((grant) => grant === 'refresh_token').length;
  const expireOurToken = (userId: string | null) =>
    db('connector_oauth_connections')
      .where({ connector_id: connectorId, ...(userId === null ? {} : { user_id: userId }) })
      .update({ expires_at: db.raw(`now() - interval '1 second'`) });

  it('discovery → dynamic registration → authorization code with PKCE and resource → callback → a turn calls a tool with the member’s token', async () => {
    expect((await connection(alice)).body).to.deep.equal({
      connection: {
        connector_id: connectorId,
        status: 'not_connected',
        scope: null,
        expires_at: null,
        connected_at: null,
        refreshed_at: null,
        status_changed_at: null,
        last_error: null,
      },
    });
    // Not connected: the connector's tools are not offered.
    expect((await turn(alice, '/tool tracker__whoami {}')).toolResult).to.equal('Error: no tool named "tracker__whoami" is offered in this turn');

    const { started, status, page, callbackUrl } = await connect(alice, 'alice');
    const authorization = new URL(started.authorization_url);
    expect(authorization.origin).to.equal(as.issuer);
    const client = await db('connector_oauth_clients').where({ connector_id: connectorId }).first();
    expect(client).to.include({ source: 'registered', issuer: as.issuer, redirect_uri: `${server.url}/connectors/oauth/callback` });
    expect(Object.fromEntries(authorization.searchParams)).to.include({
      response_type: 'code',
      client_id: client.client_id,
      code_challenge_method: 'S256',
      redirect_uri: `${server.url}/connectors/oauth/callback`,
      resource: mcp.url,
      scope: 'tools',
    });
    expect(authorization.searchParams.get('code_challenge')).to.match(/^[A-Za-z0-9_-]{43}$/);
    expect(authorization.searchParams.get('state')).to.match(/^[A-Za-z0-9_-]{43}$/);
    expect(new Date(started.expires_at).getTime()).to.be.greaterThan(Date.now());
    expect(status, page).to.equal(200);
    expect(page).to.contain('Connected to Tracker');
    // The state was good once: the pending authorization is gone, and the same answer again is refused.
    expect(await db('connector_oauth_authorizations').where({ connector_id: connectorId })).to.have.length(0);
    const again = await fetch(callbackUrl, { redirect: 'manual' });
    expect(again.status).to.equal(400);
    expect(await again.text()).to.contain('unknown, was used already or expired');
    expect(as.grants).to.deep.equal(['authorization_code']);

    const shown = await connection(alice);
    expect(shown.status).to.equal(200);
    expect(shown.body.connection).to.include({ connector_id: connectorId, status: 'connected', last_error: null });
    expect(new Date(shown.body.connection.expires_at).getTime()).to.be.greaterThan(Date.now() + 3000 * 1000);

    const first = await turn(alice, '/tool tracker__whoami {}');
    expect(first.run.status).to.equal('succeeded');
    expect(first.toolResult).to.equal('sub=alice');
    // The token: sent to the MCP server, never shown by the API, sealed at rest.
    const token = mcp.tokens.at(-1)!;
    expect(JSON.stringify(shown.body)).not.to.contain(token);
    const row = await db('connector_oauth_connections').where({ connector_id: connectorId, user_id: alice.id }).first();
    expect(row.access_token.includes(Buffer.from(token))).to.equal(false);
    expect(row.refresh_token).to.be.an.instanceOf(Buffer);
  });

  it('an expired token is refreshed before the call (for real, at the server’s expiry too), and the next turn works', async () => {
    as.setTokenTtl(2);
    await expireOurToken(alice.id);
    const before = refreshes();
    const second = await turn(alice, '/tool tracker__add {"a":2,"b":3}');
    expect(second.toolResult).to.equal('sum=5');
    expect(refreshes()).to.equal(before + 1);
    const shortLived = mcp.tokens.at(-1)!;
    // The server lets it expire (2 s); so do we, and the next turn refreshes again.
    await eventually('the access token expired at the server', async () => {
      const answer = await fetch(`${as.issuer}/token/introspection`, {
        method: 'POST',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          authorization: `Basic ${Buffer.from('mcp-resource-server:resource-server-secret-0123456789').toString('base64')}`,
        },
        body: new URLSearchParams({ token: shortLived }).toString(),
      });
      return ((await answer.json()) as { active: boolean }).active === false;
    });
    as.setTokenTtl(3600);
    const third = await turn(alice, '/tool tracker__whoami {}');
    expect(third.toolResult).to.equal('sub=alice');
    expect(refreshes()).to.equal(before + 2);
    expect(mcp.tokens.at(-1)).not.to.equal(shortLived);
    expect((await connection(alice)).body.connection.refreshed_at).to.be.a('string');
  });

  it('a token the MCP server refuses (401) is refreshed once and the call retried', async () => {
    await as.destroyAccessTokens();
    const before = refreshes();
    const seen = mcp.seen.length;
    const retried = await turn(alice, '/tool tracker__whoami {}');
    expect(retried.toolResult).to.equal('sub=alice');
    expect(refreshes()).to.equal(before + 1);
    // The refused token first, then the renewed one.
    expect(mcp.seen.slice(seen).map((s) => s.subject)).to.include.ordered.members([null, 'alice']);
  });

  it('ten turns and ten calls racing an expired token: one refresh, every one succeeds', async () => {
    await expireOurToken(alice.id);
    const before = refreshes();
    const deps = { config: testConfig(overrides), db };
    const connector = (await db('connectors').where({ id: connectorId }).first()) as ConnectorRow;
    const bearers = await Promise.all(Array.from({ length: 10 }, () => oauthBearer(deps, connector, alice.id)));
    expect(refreshes()).to.equal(before + 1);
    expect(new Set(bearers.map((b) => b.token)).size).to.equal(1);

    await expireOurToken(alice.id);
    const turns = await Promise.all(Array.from({ length: 10 }, (_, i) => turn(alice, `/tool tracker__add {"a":${i},"b":1}`)));
    expect(turns.map((t) => t.toolResult)).to.deep.equal(Array.from({ length: 10 }, (_, i) => `sum=${i + 1}`));
    expect(refreshes()).to.equal(before + 2);
    expect(as.revokedGrants).to.deep.equal([]);
  });

  it('a member’s tokens serve only their turns: another member connects their own, and the one without a connection is offered nothing', async () => {
    const dave = newUser();
    await addMember(db, org, dave);
    expect((await turn(dave, '/tool tracker__whoami {}')).toolResult).to.equal('Error: no tool named "tracker__whoami" is offered in this turn');
    const { status } = await connect(carol, 'carol');
    expect(status).to.equal(200);
    expect((await turn(carol, '/tool tracker__whoami {}')).toolResult).to.equal('sub=carol');
    expect((await turn(alice, '/tool tracker__whoami {}')).toolResult).to.equal('sub=alice');
    expect((await connection(dave)).body.connection.status).to.equal('not_connected');
    // An outsider sees neither the connector nor a connection.
    expect((await connection(newUser())).status).to.equal(404);
  });

  it('revoked at the server: the call answers the model with a tool error, nothing is billed, and the connection needs re-consent', async () => {
    await as.revokeGrantsOf('alice');
    const refused = await turn(alice, '/tool tracker__whoami {}');
    expect(refused.run.status).to.equal('succeeded');
    expect(refused.toolResult).to.match(/^Error: connector "Tracker": your connection needs re-consent/);
    expect(refused.calls.map((c: { status: string; credits: number }) => [c.status, c.credits])).to.deep.equal([['failed', 0]]);
    expect(await reconcileCredits(db, org)).to.deep.equal([]);
    const shown = (await connection(alice)).body.connection;
    expect(shown.status).to.equal('needs_reconsent');
    expect(shown.last_error).to.match(/refused the refresh \(invalid_grant/);
    const events = await db('events').where({ organization_id: org, type: 'connector.connection.changed' }).orderBy('created_at');
    expect(events.map((e: { data: { object: { status: string; user_id: string } } }) => [e.data.object.status, e.data.object.user_id])).to.deep.include([
      'needs_reconsent',
      alice.id,
    ]);
    // Connecting again makes it usable again.
    expect((await connect(alice, 'alice')).status).to.equal(200);
    expect((await turn(alice, '/tool tracker__whoami {}')).toolResult).to.equal('sub=alice');
  });

  it('a removed member’s connection is revoked at once and at the server; disconnecting does the same', async () => {
    const [carolGrant] = as.grantsOf('carol');
    expect((await server.request('delete', `/organizations/${org}/members/${carol.id}`, { token: alice.token })).status).to.equal(204);
    const row = await db('connector_oauth_connections').where({ connector_id: connectorId, user_id: carol.id }).first();
    expect(row.status).to.equal('revoked');
    await eventually('carol’s tokens revoked at the server and erased', async () => {
      const now = await db('connector_oauth_connections').where({ id: row.id }).first();
      return now.revoke_pending === false && now.access_token === null && now.refresh_token === null;
    });
    expect(as.revokedGrants).to.include(carolGrant);

    const aliceGrants = as.grantsOf('alice');
    expect((await server.request('delete', `/connectors/${connectorId}/oauth/connection`, { token: alice.token })).status).to.equal(204);
    expect((await connection(alice)).body.connection.status).to.equal('revoked');
    await eventually('alice’s grant revoked at the server', async () => as.revokedGrants.includes(aliceGrants.at(-1)!));
    expect((await turn(alice, '/tool tracker__whoami {}')).toolResult).to.equal('Error: no tool named "tracker__whoami" is offered in this turn');
  });

  it('the callback is open without a token; a bogus state is refused with a page, not a 401', async () => {
    const answer = await fetch(`${server.url}/connectors/oauth/callback?state=nothing-like-it&code=abc`);
    expect(answer.status).to.equal(400);
    expect(answer.headers.get('content-type')).to.contain('text/html');
    expect(await answer.text()).to.contain('unknown, was used already or expired');
  });

  it('the callback refuses an answer naming another issuer (RFC 9207) or reaching a member who left, and each state is spent by its first use', async () => {
    const stateOf = async (user: TestUser) => {
      const started = await server.request('post', `/connectors/${connectorId}/oauth/authorize`, { token: user.token });
      expect(started.status, JSON.stringify(started.body)).to.equal(200);
      return new URL(started.body.authorization.authorization_url).searchParams.get('state')!;
    };
    const callback = async (query: Record<string, string>) => {
      const answer = await fetch(`${server.url}/connectors/oauth/callback?${new URLSearchParams(query)}`);
      return { status: answer.status, page: await answer.text() };
    };
    const mixedUp = await stateOf(alice);
    const evil = await callback({ state: mixedUp, code: 'x', iss: 'http://evil.example' });
    expect(evil.status).to.equal(400);
    expect(evil.page).to.contain(`the answer comes from http://evil.example, not ${as.issuer}`);
    expect((await callback({ state: mixedUp, code: 'x', iss: as.issuer })).page).to.contain('unknown, was used already or expired');
    const denied = await callback({ state: await stateOf(alice), error: 'access_denied', error_description: 'the user said no' });
    expect(denied.status).to.equal(400);
    expect(denied.page).to.contain('the authorization server answered access_denied: the user said no');
    const erin = newUser();
    await addMember(db, org, erin);
    const leaving = await stateOf(erin);
    await db('organization_members').where({ organization_id: org, user_id: erin.id }).delete();
    const left = await callback({ state: leaving, code: 'x', iss: as.issuer });
    expect(left.status).to.equal(400);
    expect(left.page).to.contain('you are no longer a member of its organization');
    expect(await db('connector_oauth_connections').where({ connector_id: connectorId, user_id: erin.id })).to.have.length(0);
  });

  it('client credentials: an admin’s organization connector runs as the organization, for any member', async () => {
    const created = await server.request('post', '/connectors', {
      token: alice.token,
      body: { organization_id: org, type: 'mcp', name: 'Machine', url: mcp.url, auth_scheme: 'oauth_client_credentials' },
    });
    expect(created.status).to.equal(201);
    const id = created.body.connector.id;
    const dave = newUser();
    await addMember(db, org, dave);
    const refusedToMember = await server.request('put', `/connectors/${id}/oauth/client`, { token: dave.token, body: { client_id: 'x' } });
    expect(refusedToMember.status).to.equal(403);
    const configured = await server.request('put', `/connectors/${id}/oauth/client`, {
      token: alice.token,
      body: { client_id: MACHINE_CLIENT.client_id, client_secret: MACHINE_CLIENT.client_secret, scope: 'tools' },
    });
    expect(configured.status, JSON.stringify(configured.body)).to.equal(200);
    expect(configured.body.oauth_client).to.include({ connector_id: id, source: 'configured', client_id: MACHINE_CLIENT.client_id, secret_set: true });
    expect(JSON.stringify(configured.body)).not.to.contain(MACHINE_CLIENT.client_secret);
    expect((await turn(dave, '/tool machine__whoami {}')).toolResult).to.equal(`sub=client:${MACHINE_CLIENT.client_id}`);
    expect(as.grants).to.include('client_credentials');
    expect((await connection(dave, id)).body.connection.status).to.equal('connected');
  });

  it('SSRF: metadata, an authorization server or a token endpoint at a private address is refused (502 naming it), and nothing is kept', async () => {
    const created = await server.request('post', '/connectors', {
      token: alice.token,
      body: { organization_id: org, type: 'mcp', name: 'Lure', url: `${lureUrl}/mcp`, auth_scheme: 'oauth' },
    });
    expect(created.status, JSON.stringify(created.body)).to.equal(201);
    const id = created.body.connector.id;
    const start = () => server.request('post', `/connectors/${id}/oauth/authorize`, { token: alice.token });
    const cases: [Partial<typeof pointers>, RegExp][] = [
      [
        { resourceMetadata: 'http://169.254.169.254/latest/meta-data/iam', authorizationServer: lureUrl, tokenEndpoint: `${lureUrl}/token` },
        /the protected resource metadata http:\/\/169\.254\.169\.254\/latest\/meta-data\/iam is refused: 169\.254\.169\.254 is a linkLocal address/,
      ],
      // Loopback, but not a port OUTBOUND_ALLOWLIST opens.
      [
        { resourceMetadata: `${lureUrl}/prm`, authorizationServer: 'http://127.0.0.1:1/' },
        /the authorization server http:\/\/127\.0\.0\.1:1\/ is refused: 127\.0\.0\.1 is a loopback address/,
      ],
      [
        { authorizationServer: lureUrl, tokenEndpoint: 'http://10.0.0.7/token' },
        /the token endpoint http:\/\/10\.0\.0\.7\/token is refused: 10\.0\.0\.7 is a private address/,
      ],
    ];
    for (const [pointing, refusal] of cases) {
      Object.assign(pointers, pointing);
      const refused = await start();
      expect(refused.status, JSON.stringify(refused.body)).to.equal(502);
      expect(refused.body.code).to.equal('upstream_failed');
      expect(refused.body.message).to.match(/^connector "Lure": /);
      expect(refused.body.message).to.match(refusal);
    }
    expect(await db('connector_oauth_authorizations').where({ connector_id: id })).to.have.length(0);
    expect(await db('connector_oauth_clients').where({ connector_id: id })).to.have.length(0);
  });

  it('deleting the connector revokes its connections at the server and drops pending authorizations', async () => {
    expect((await connect(alice, 'alice')).status).to.equal(200);
    const grant = as.grantsOf('alice').at(-1)!;
    expect(as.revokedGrants).not.to.include(grant);
    await server.request('post', `/connectors/${connectorId}/oauth/authorize`, { token: alice.token });
    expect((await server.request('delete', `/connectors/${connectorId}`, { token: alice.token })).status).to.equal(204);
    const row = await db('connector_oauth_connections').where({ connector_id: connectorId, user_id: alice.id }).first();
    expect(row.status).to.equal('revoked');
    expect(await db('connector_oauth_authorizations').where({ connector_id: connectorId })).to.have.length(0);
    await eventually('the grant revoked at the server', async () => as.revokedGrants.includes(grant));
  });

  it('key rotation: connectors:reencrypt moves every OAuth secret to the first key, in batches, idempotently (unit)', async () => {
    // The revocation jobs of the tests above erase what they revoked: let them finish first.
    await eventually('no revocation pending', async () => (await db('connector_oauth_connections').where({ revoke_pending: true })).length === 0);
    const local = (await resolveKeyring(testConfig(overrides)))!;
    const fresh = { id: 'rotated', key: randomBytes(32) };
    const rotated = keyringOf([fresh, local.current]);
    const connections = await db('connector_oauth_connections').whereNotNull('access_token');
    expect(connections.length).to.be.at.least(1);
    const tokens = new Map(connections.map((row) => [row.id, openAccessToken(local, row)]));
    const sealedRows = async (table: string) => (await db(table).whereNotNull('key_id')).length;
    const pending =
      (await sealedRows('connector_oauth_connections')) + (await sealedRows('connector_oauth_authorizations')) + (await sealedRows('connector_oauth_clients'));
    expect(await reencryptOAuthSecrets(db, rotated, { batchSize: 1 })).to.deep.equal({ reencrypted: pending });
    const newOnly = keyringOf([fresh]);
    for (const row of await db('connector_oauth_connections').whereIn('id', [...tokens.keys()])) {
      expect(row.key_id).to.equal('rotated');
      expect(openAccessToken(newOnly, row)).to.equal(tokens.get(row.id));
    }
    expect(await reencryptOAuthSecrets(db, rotated), 'a second run has nothing to do').to.deep.equal({ reencrypted: 0 });
  });
});
