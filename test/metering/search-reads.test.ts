import { expect } from 'chai';
import { grantCredits } from '../../src/credits/ledger.ts';
import { reconcileCredits } from '../../src/credits/reconcile.ts';
import type { Db } from '../../src/db/knex.ts';
import { createOrganization, newUser, type TestUser } from '../support/factories.ts';
import type { TestServer } from '../support/server.ts';
import { type Stack, startStack } from '../support/stack.ts';
import { startUpstream, type FakeUpstream } from '../support/upstream.ts';

const ARTICLE = `<!doctype html><html lang="en"><head><title>Winter foxes | Field Notes</title>
<meta name="author" content="Ada Lovelace"></head><body>
<nav><a href="/">Home</a> <a href="/about">About</a></nav>
<article><h1>How foxes hunt in winter</h1>
<p>In deep snow a red fox listens for the rustle of voles under the surface, then leaps high and dives head first.</p>
<p>Researchers noticed the foxes jump more often when facing north-east, and land a catch far more often that way.</p>
<p>Read more in the <a href="/papers/magnetic">magnetic alignment paper</a>.</p></article>
<footer>© Field Notes — all rights reserved</footer></body></html>`;

/** POST /search and POST /read-url end to end: billed like social reads, page reading through the SSRF-safe fetcher. */
describe('web search and page reading (metered calls)', function () {
  this.timeout(60_000);
  let stack: Stack;
  let server: TestServer;
  let upstream: FakeUpstream;
  let db: Db;
  let alice: TestUser;
  let org: string;

  before(async () => {
    upstream = await startUpstream({
      '/articles/foxes': (_req, res) => {
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
        res.end(ARTICLE);
      },
      '/photo.png': (_req, res) => {
        res.writeHead(200, { 'content-type': 'image/png' });
        res.end(Buffer.alloc(64));
      },
    });
    stack = await startStack({ WORKER_POLL_INTERVAL_SECONDS: '0.5', OUTBOUND_ALLOWLIST: `127.0.0.1:${upstream.port}` });
    ({ server, db } = stack);
    alice = newUser();
    org = await createOrganization(server, alice);
    await db.transaction((trx) => grantCredits(trx, { organizationId: org, source: 'purchase', amount: 100, description: 'Test credits' }));
  });
  after(async () => {
    await stack?.stop();
    await upstream?.close();
  });

  const captured = async () => Number((await db('credit_balances').where({ organization_id: org }).first('captured')).captured);
  const post = (path: string, body: Record<string, unknown>) => server.request('post', path, { token: alice.token, body: { organization_id: org, ...body } });

  it('GET /search/operations lists search and read_url with their schemas and prices', async () => {
    const res = await server.request('get', '/search/operations', { token: alice.token, query: { organization_id: org } });
    expect(res.status).to.equal(200);
    expect(res.body.operations.map((o: { name: string; price: unknown }) => [o.name, o.price])).to.deep.equal([
      ['search', { per_request: 1, per_page: 1 }],
      ['read_url', { per_request: 2, per_page: 0 }],
    ]);
    expect(res.body.operations[0].input_schema.required).to.deep.equal(['query']);
  });

  it('POST /search: results, billed per page fetched; the input sits beside the billing fields', async () => {
    const before = await captured();
    const res = await post('/search', { query: 'how foxes hunt in winter', limit: 15, tool_call_id: 'search-1' });
    expect(res.status).to.equal(200);
    // The result's fields at the top level beside the billing fields (CONVENTIONS §4), not under `result`.
    expect(res.body).to.include({ operation: 'search', requests: 2, credits_charged: 3, query: 'how foxes hunt in winter' });
    expect(res.body).not.to.have.property('result');
    expect(res.body.results).to.have.length(15);
    expect(res.body.summary).to.match(/sandbox/i);
    expect((await captured()) - before).to.equal(3);
    const tooDear = await post('/search', { query: 'foxes', limit: 50, max_credits: 5 });
    expect(tooDear.status).to.equal(400);
    expect(tooDear.body.data.issues[0].path).to.deep.equal(['max_credits']);
  });

  it('POST /read-url: the article’s readable text and metadata, 2 credits', async () => {
    const before = await captured();
    const res = await post('/read-url', { url: `${upstream.url}/articles/foxes` });
    expect(res.status).to.equal(200);
    expect(res.body).to.include({ operation: 'read_url', requests: 1, credits_charged: 2 });
    expect(res.body).not.to.have.property('result');
    const page = res.body;
    expect(page).to.include({ content_type: 'text/html', language: 'en', final_url: `${upstream.url}/articles/foxes`, truncated: false });
    expect(page.title).to.match(/foxes hunt in winter|Winter foxes/);
    expect(page.text).to.include('listens for the rustle of voles');
    expect(page.text).not.to.include('all rights reserved');
    expect(page.links.map((l: { url: string }) => l.url)).to.include(`${upstream.url}/papers/magnetic`);
    expect((await captured()) - before).to.equal(2);
  });

  it('refused pages answer 422 and invalid URLs 400; nothing is charged', async () => {
    const before = await captured();
    const image = await post('/read-url', { url: `${upstream.url}/photo.png` });
    expect(image.status).to.equal(422);
    expect(image.body.code).to.equal('upstream_refused');
    expect(image.body.message).to.match(/^read_url: content type image\/png is not readable/);
    // Loopback on a port outside the allowlist: refused by the address policy, never fetched.
    const requests = upstream.requests.length;
    const privateAddress = await post('/read-url', { url: 'http://127.0.0.1:9/admin' });
    expect(privateAddress.status).to.equal(422);
    expect(privateAddress.body.message).to.match(/loopback/);
    expect(upstream.requests.length).to.equal(requests);
    const invalid = await post('/read-url', { url: 'ftp://example.com/file' });
    expect(invalid.status).to.equal(400);
    expect(invalid.body.data.issues[0].path).to.deep.equal(['url']);
    expect(await captured()).to.equal(before);
    expect(await db('credit_holds').where({ organization_id: org, status: 'held' })).to.have.length(0);
    expect(await reconcileCredits(db, org)).to.deep.equal([]);
  });
});
