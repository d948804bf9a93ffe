import { expect } from 'chai';
import { grantCredits } from '../../src/credits/ledger.ts';
import type { Db } from '../../src/db/knex.ts';
import { createOrganization, newUser, type TestUser } from '../support/factories.ts';
import type { TestServer } from '../support/server.ts';
import { type Stack, startStack } from '../support/stack.ts';
import { type FakeUpstream, json, startUpstream } from '../support/upstream.ts';

/**
 * Public trends when the social provider fails: a real web process and worker, the HTTP social
 * provider pointed (in the worker only) at a fake service that counts the requests it gets.
 */
describe('public trends: a failed refresh is remembered (negative cache), nothing billed', function () {
  this.timeout(60_000);
  let upstream: FakeUpstream;
  let stack: Stack;
  let server: TestServer;
  let db: Db;
  let alice: TestUser;
  let org: string;
  let healthy = false;

  before(async () => {
    upstream = await startUpstream({
      '/v1/social/net2_trends': (_req, res) =>
        healthy
          ? json(res, 200, { result: { summary: 'Trending in the US', items: [{ rank: 1, name: 'ada' }], next_cursor: null }, pages: 1 })
          : json(res, 500, { error: { message: 'upstream exploded' } }),
    });
    stack = await startStack({ READ_TIMEOUT_MS: '8000', WORKER_POLL_INTERVAL_SECONDS: '0.5' }, { SOCIAL_API_URL: upstream.url, SOCIAL_API_KEY: 'test-key' });
    ({ server, db } = stack);
    alice = newUser();
    org = await createOrganization(server, alice);
    await db.transaction((trx) => grantCredits(trx, { organizationId: org, source: 'purchase', amount: 100, description: 'Test credits' }));
  });
  after(async () => {
    await stack?.stop();
    await upstream?.close();
  });

  const trendsCalls = () => upstream.requests.filter((path) => path === '/v1/social/net2_trends').length;
  // net2's refreshes only: GET /social/trends asks for net3's trends beside them, and that request goes on
  // (claiming net3's own refresh) after net2's remembered failure has answered 502.
  const net2Refreshes = () => db('pgboss.job').where({ name: 'social.refresh-trends.v1' }).whereRaw(`data->>'operation' = 'net2_trends'`);
  const refreshJobRows = () => net2Refreshes().select('id', 'state', 'retry_count', 'created_on', 'started_on', 'data');
  const refreshJobs = async () => Number((await net2Refreshes().count('* as n').first())?.n);
  const balance = async () => db('credit_balances').where({ organization_id: org }).first('granted', 'captured', 'held', 'expired');
  const expectRemembered = (res: { status: number; body: any; headers: Headers }) => {
    expect(res.status, JSON.stringify(res.body)).to.equal(502);
    expect(res.body.code).to.equal('upstream_failed');
    expect(res.body.message).to.match(/^net2_trends: the trends of US could not be fetched \(failed\); retry in \d+ s$/);
    expect(res.body.data).to.deep.equal({ issues: [] });
    const retryAfter = Number(res.headers.get('retry-after'));
    expect(retryAfter).to.be.within(1, 60);
  };

  it('the first request answers 502 once the refresh fails; requests during the failure TTL answer 502 at once without asking the provider; afterwards it is asked again', async () => {
    const before = await balance();
    const first = await server.request('get', '/social/trends/public/US', { token: alice.token });
    expectRemembered(first);
    // One refresh: the provider's own attempts (a 500 is retried twice by the HTTP adapter), no job retries.
    expect(trendsCalls()).to.equal(3);
    expect(await refreshJobs()).to.equal(1);
    const row = await db('social_trends').where({ operation: 'net2_trends', region: 'US' }).first();
    expect(row.result).to.equal(null);
    expect(row.failure).to.deep.equal({ kind: 'failed', message: "the social provider's answer could not be used (failed)" });

    // Even once the 30 s guard against a lost refresh has passed, the remembered failure holds: no new refresh.
    await db('social_trends')
      .where({ operation: 'net2_trends', region: 'US' })
      .update({ refresh_requested_at: db.raw(`now() - interval '31 seconds'`), failed_at: db.raw(`now() - interval '30 seconds'`) });
    for (let i = 0; i < 5; i++) {
      const started = Date.now();
      const again = await server.request('get', '/social/trends/public/US', { token: alice.token });
      expectRemembered(again);
      expect(Date.now() - started, 'answered at once, not at the read timeout').to.be.below(2000);
    }
    const both = await server.request('get', '/social/trends', { token: alice.token, query: { organization_id: org, region: 'US' } });
    expect(both.status).to.equal(502);
    expect(trendsCalls()).to.equal(3);
    expect(await refreshJobs(), JSON.stringify({ jobs: await refreshJobRows(), cache: await db('social_trends').select() })).to.equal(1);

    // The failure TTL (60 s by default) has passed: the next request asks the provider again.
    healthy = true;
    await db('social_trends')
      .where({ operation: 'net2_trends', region: 'US' })
      .update({ failed_at: db.raw(`now() - interval '61 seconds'`) });
    const fetched = await server.request('get', '/social/trends/public/US', { token: alice.token });
    expect(fetched.status, JSON.stringify(fetched.body)).to.equal(200);
    expect(fetched.body.result.summary).to.equal('Trending in the US');
    expect(trendsCalls()).to.equal(4);

    // Nothing was billed: no metered call, the balance unchanged.
    expect(await db('metered_calls').where({ organization_id: org })).to.have.length(0);
    expect(await balance()).to.deep.equal(before);
  });
});
