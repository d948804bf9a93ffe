import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { grantCredits } from '../../src/credits/ledger.ts';
import { reconcileCredits } from '../../src/credits/reconcile.ts';
import { socialOperations } from '../../src/social/index.ts';
import type { Db } from '../../src/db/knex.ts';
import { eventually } from '../jobs/support.ts';
import type { TestServer } from '../support/server.ts';
import { type Stack, startStack } from '../support/stack.ts';
import { addMember, createConversation, createOrganization, newUser, type TestUser } from '../support/factories.ts';

const profileFields = [
  'created_at',
  'description',
  'followers_count',
  'following_count',
  'id',
  'likes_count',
  'listed_count',
  'location',
  'media_count',
  'name',
  'profile_image_url',
  'summary',
  'tweet_count',
  'url',
  'username',
  'verified',
];

/**
 * Social reads end to end through the sandbox provider: a real web process, real pg-boss and a real
 * worker. Every organization starts with 10 credits (STARTER_CREDITS), which the concurrency test
 * relies on; other tests grant more.
 */
describe('social reads (metered calls: hold, worker, settle, NOTIFY)', function () {
  this.timeout(60_000);
  let stack: Stack;
  let server: TestServer;
  let db: Db;
  let alice: TestUser;
  let org: string;

  before(async () => {
    stack = await startStack({ STARTER_CREDITS: '10', WORKER_POLL_INTERVAL_SECONDS: '0.5', WORKER_CONCURRENCY: '8', READ_TIMEOUT_MS: '3000' });
    ({ server, db } = stack);
    alice = newUser();
    org = await createOrganization(server, alice);
    await db.transaction((trx) => grantCredits(trx, { organizationId: org, source: 'purchase', amount: 1000, description: 'Test credits' }));
  });
  after(() => stack?.stop());

  const available = async (organizationId: string) => {
    const b = await db('credit_balances').where({ organization_id: organizationId }).first();
    return Number(b.granted) - Number(b.captured) - Number(b.held) - Number(b.expired);
  };
  const read = (operation: string, body: Record<string, unknown>, user = alice) =>
    server.request('post', `/social/${operation}`, { token: user.token, body: { organization_id: org, ...body } });
  const callsOf = (organizationId: string) => db('metered_calls').where({ organization_id: organizationId });

  it('net2_profile: 200 with exactly §4.5/§2.10, the balance moves by credits_charged, ledger rows carry the attribution', async () => {
    const conversation = await createConversation(server, alice, org, { title: 'Research' });
    const message = await server.request('post', `/conversations/${conversation.id}/messages`, { token: alice.token, body: { content: 'Who is @ada?' } });
    const before = await available(org);
    const body = { input: { username: 'ada' }, tool_call_id: 'call_1', conversation_id: conversation.id, message_id: message.body.message.id };
    const res = await read('net2_profile', body);
    expect(res.status).to.equal(200);
    expect(Object.keys(res.body)).to.deep.equal(['operation', 'result', 'requests', 'credits_charged']);
    expect(res.body).to.include({ operation: 'net2_profile', requests: 1, credits_charged: 1 });
    expect(Object.keys(res.body.result).sort()).to.deep.equal(profileFields);
    expect(res.body.result.username).to.equal('ada');
    expect(res.body.result.summary).to.match(/sandbox/i);
    expect(await available(org)).to.equal(before - 1);

    const [call] = await callsOf(org).where({ tool_call_id: 'call_1' });
    expect(call).to.include({ status: 'succeeded', operation: 'net2_profile', quoted_credits: 1, credits_charged: 1, pages: 1, user_id: alice.id });
    const entries = await db('credit_ledger_entries')
      .join('credit_holds', 'credit_holds.id', 'credit_ledger_entries.hold_id')
      .where('credit_holds.run_id', `metered-call:${call.id}`)
      .orderBy('credit_ledger_entries.seq')
      .select(
        'kind',
        'credit_ledger_entries.amount',
        'credit_ledger_entries.tool_call_id',
        'credit_ledger_entries.conversation_id',
        'credit_ledger_entries.message_id',
      );
    expect(entries).to.deep.equal(
      ['hold', 'capture'].map((kind) => ({ kind, amount: 1, tool_call_id: 'call_1', conversation_id: conversation.id, message_id: message.body.message.id })),
    );

    // The same tool call again: it runs, so it is billed again (§4.5); same input, same sandbox answer.
    const again = await read('net2_profile', body);
    expect(again.status).to.equal(200);
    expect(again.body.result).to.deep.equal(res.body.result);
    expect(await available(org)).to.equal(before - 2);
    expect(await callsOf(org).where({ tool_call_id: 'call_1', status: 'succeeded' })).to.have.length(2);
    expect(await reconcileCredits(db, org)).to.deep.equal([]);

    // Reports sum the usage by tool call, conversation and operation (kind).
    const day = (offset: number) => new Date(Date.now() + offset * 86_400_000).toISOString().slice(0, 10);
    const report = (group_by: string) =>
      server.request('post', '/reports/query', { token: alice.token, body: { organization_id: org, from: day(-1), to: day(1), group_by } });
    for (const [groupBy, key] of [
      ['tool_call', 'call_1'],
      ['conversation', conversation.id],
      ['kind', 'net2_profile'],
    ] as const) {
      const res = await report(groupBy);
      expect(res.status, groupBy).to.equal(200);
      expect(
        res.body.report.rows.find((r: { key: string }) => r.key === key),
        groupBy,
      ).to.deep.include({ credits: 2, captures: 2 });
    }
  });

  it('a paged list holds its quote and captures only the pages fetched; the quote route holds nothing', async () => {
    const quote = await server.request('post', '/social/net2_user_posts/quote', {
      token: alice.token,
      body: { organization_id: org, input: { username: 'ada', count: 50 } },
    });
    expect(quote.status).to.equal(200);
    expect(quote.body).to.deep.equal({ operation: 'net2_user_posts', credits: 4, pages: 3, price: { per_request: 1, per_page: 1 } });
    // The quote takes the §4.5 body of the call it quotes: a client quotes exactly what it is about to send.
    const full = {
      organization_id: org,
      max_credits: 10,
      tool_call_id: 'call-quote',
      conversation_id: null,
      message_id: null,
      run_lock: false,
      input: { username: 'ada', count: 50 },
    };
    const same = await server.request('post', '/social/net2_user_posts/quote', { token: alice.token, body: full });
    expect(same.status, JSON.stringify(same.body)).to.equal(200);
    expect(same.body).to.deep.equal(quote.body);
    const unknown = await server.request('post', '/social/net2_user_posts/quote', { token: alice.token, body: { ...full, surprise: 1 } });
    expect(unknown.status).to.equal(400);
    const before = await available(org);
    const res = await read('net2_user_posts', { input: { username: 'ada', count: 50 } });
    expect(res.status).to.equal(200);
    expect(res.body.result.items).to.have.length(50);
    expect(res.body.requests).to.be.within(1, 3);
    expect(res.body.credits_charged).to.equal(1 + res.body.requests);
    expect(await available(org)).to.equal(before - res.body.credits_charged);
    const [call] = await callsOf(org).where({ operation: 'net2_user_posts' });
    const hold = await db('credit_holds')
      .where({ run_id: `metered-call:${call.id}` })
      .first();
    expect(hold).to.include({ amount: 4, captured: res.body.credits_charged, released: 4 - res.body.credits_charged, status: 'captured' });
  });

  it('refuses before holding anything: invalid input names the field, an unknown operation is 404, a quote above max_credits is 400', async () => {
    const calls = (await callsOf(org)).length;
    const holds = (await db('credit_holds').where({ organization_id: org })).length;
    for (const [body, path] of [
      [{ input: {} }, ['input', 'username']],
      [{ input: { username: 'ada', surprise: true } }, ['input']],
      [{ input: { username: 'ada' }, max_credits: 0 }, ['max_credits']],
      [{ input: { username: 'ada' }, run_lock: true }, ['conversation_id']],
      [{ input: { username: 'ada' }, conversation_id: randomUUID() }, ['conversation_id']],
    ] as const) {
      const res = await read('net2_profile', body);
      expect(res.status, JSON.stringify(body)).to.equal(400);
      expect(res.body.data.issues[0].path, JSON.stringify(body)).to.deep.equal(path);
    }
    const tooDear = await read('net2_user_posts', { input: { username: 'ada', count: 100 }, max_credits: 3 });
    expect(tooDear.status).to.equal(400);
    expect(tooDear.body.message).to.equal('max_credits: the quoted ceiling is 6 credits, more than max_credits (3); nothing was charged');
    expect((await server.request('post', '/social/net9_profile', { token: alice.token, body: { organization_id: org, input: {} } })).status).to.equal(404);
    expect((await callsOf(org)).length).to.equal(calls);
    expect((await db('credit_holds').where({ organization_id: org })).length).to.equal(holds);
    // Outside the organization: 403, as every collection-level operation.
    expect((await read('net2_profile', { input: { username: 'ada' } }, newUser())).status).to.equal(403);
  });

  it('provider timeout → 504, malformed answer → 502: nothing charged, the hold released', async () => {
    const before = await available(org);
    const slow = await read('net2_profile', { input: { username: 'sandbox-timeout' } });
    expect(slow.status).to.equal(504);
    expect(slow.body.code).to.equal('upstream_timeout');
    const broken = await read('net2_profile', { input: { username: 'sandbox-malformed' } });
    expect(broken.status).to.equal(502);
    expect(broken.body).to.include({ code: 'upstream_failed' });
    expect(broken.body.message).to.match(/^net2_profile: the provider answered a malformed result \(result\.summary: .+\); nothing was charged$/);
    expect(await available(org)).to.equal(before);
    const failed = await callsOf(org).whereIn('status', ['failed']).select('credits_charged', 'error');
    expect(failed.map((c) => [c.credits_charged, c.error.code]).sort()).to.deep.equal([
      [0, 'malformed'],
      [0, 'timeout'],
    ]);
    expect(await db('credit_holds').where({ organization_id: org, status: 'held' })).to.have.length(0);
    expect(await reconcileCredits(db, org)).to.deep.equal([]);
  });

  it('50 concurrent reads against a balance for 10: exactly 10 succeed, 40 get 402, the balance never goes negative', async () => {
    const owner = newUser();
    const poor = await createOrganization(server, owner);
    const member = newUser();
    await addMember(db, poor, member);
    expect(await available(poor)).to.equal(10);
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        server.request('post', '/social/net2_profile', {
          token: i % 2 ? owner.token : member.token,
          body: { organization_id: poor, input: { username: `user${i}` } },
        }),
      ),
    );
    const statuses = results.map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).to.have.length(10);
    expect(statuses.filter((s) => s === 402)).to.have.length(40);
    for (const r of results.filter((r) => r.status === 402)) expect(r.body.code).to.equal('payment_required');
    expect(await available(poor)).to.equal(0);
    const balance = await db('credit_balances').where({ organization_id: poor }).first();
    expect(balance).to.include({ held: 0, captured: 10 });
    // Refused calls left nothing behind: no call row, no job, no hold.
    expect(await callsOf(poor)).to.have.length(10);
    expect(await db('credit_holds').where({ organization_id: poor })).to.have.length(10);
    expect(await reconcileCredits(db, poor)).to.deep.equal([]);
  });

  it('GET /social/operations lists all 52 with JSON Schemas and prices; net2_profile as §4.5 describes it', async () => {
    const res = await server.request('get', '/social/operations', { token: alice.token, query: { organization_id: org } });
    expect(res.status).to.equal(200);
    expect(res.body.operations.map((o: { name: string }) => o.name)).to.deep.equal(socialOperations.map((o) => o.name));
    expect(res.body.operations).to.have.length(52);
    const profile = res.body.operations.find((o: { name: string }) => o.name === 'net2_profile');
    expect(profile).to.deep.include({ name: 'net2_profile', network: 'net2', price: { per_request: 1, per_page: 0 } });
    expect(profile.input_schema).to.deep.include({ type: 'object', required: ['username'], additionalProperties: false });
    expect(Object.keys(profile.output_schema.properties).sort()).to.deep.equal(profileFields);
    expect(profile.output_schema.required).to.deep.equal(['summary']);
    const resolve = res.body.operations.at(-1);
    expect(resolve.name).to.equal('resolve_mention');
    expect(resolve).not.to.have.property('network');
    const outsider = await server.request('get', '/social/operations', { token: newUser().token, query: { organization_id: org } });
    expect([outsider.status, outsider.body]).to.deep.equal([200, { operations: [] }]);
  });

  it('public trends: fetched once by a worker, served from the cache, refreshed when stale; unbilled', async () => {
    const before = await available(org);
    const first = await server.request('get', '/social/trends/public/us', { token: alice.token });
    expect(first.status).to.equal(200);
    expect(Object.keys(first.body)).to.deep.equal(['network', 'operation', 'region', 'fetched_at', 'result']);
    expect(first.body).to.include({ network: 'net2', operation: 'net2_trends', region: 'US' });
    expect(first.body.result.items.length).to.be.greaterThan(0);
    expect(first.body.result.summary).to.match(/sandbox/i);
    const again = await server.request('get', '/social/trends/public/US', { token: alice.token });
    expect(again.body).to.deep.equal(first.body);
    expect(await db('pgboss.job').where({ name: 'social.refresh-trends.v1' }).count('* as n').first()).to.deep.equal({ n: 1 });

    const scan = await server.request('get', '/social/tiktok-trends/public/de', { token: alice.token });
    expect(scan.status).to.equal(200);
    expect(scan.body).to.include({ network: 'net3', operation: 'net3_trend_scan', region: 'DE' });
    expect(scan.body.result.hashtags).to.have.length(10);

    const both = await server.request('get', '/social/trends', { token: alice.token, query: { organization_id: org, region: 'US' } });
    expect(both.status).to.equal(200);
    expect(both.body.trends.map((t: { operation: string }) => t.operation)).to.deep.equal(['net2_trends', 'net3_trend_scan']);
    expect(both.body.trends[0]).to.deep.equal(first.body);
    const outsider = await server.request('get', '/social/trends', { token: newUser().token, query: { organization_id: org } });
    expect([outsider.status, outsider.body]).to.deep.equal([200, { trends: [] }]);

    // Stale: answered from the cache at once, and refreshed behind it.
    await db('social_trends')
      .where({ operation: 'net2_trends', region: 'US' })
      .update({ fetched_at: db.raw(`now() - interval '1 day'`), refresh_requested_at: db.raw(`now() - interval '1 day 1 second'`) });
    const stale = await server.request('get', '/social/trends/public/US', { token: alice.token });
    expect(stale.status).to.equal(200);
    expect(stale.body.result).to.deep.equal(first.body.result);
    // Asked again while that refresh runs: no second job.
    await server.request('get', '/social/trends/public/US', { token: alice.token });
    await eventually('the stale trends were refreshed', async () => {
      const row = await db('social_trends').where({ operation: 'net2_trends', region: 'US' }).first('fetched_at');
      return Date.now() - row.fetched_at.getTime() < 60_000;
    });
    expect(await db('pgboss.job').where({ name: 'social.refresh-trends.v1' }).count('* as n').first()).to.deep.equal({ n: 4 });
    const bad = await server.request('get', '/social/trends/public/USA', { token: alice.token });
    expect(bad.status).to.equal(400);
    expect(bad.body.message).to.match(/^params\.region: /);
    expect(await available(org)).to.equal(before);
  });

  it('every call is settled exactly once and its job ended as the call did', async () => {
    await eventually('every call job ended', async () => {
      const open = await db('pgboss.job').where({ name: 'metering.call.v1' }).whereIn('state', ['created', 'retry', 'active']).count('* as n').first();
      return Number(open?.n) === 0;
    });
    // A succeeded call's job completed; a failed call's job failed (never `completed`); a canceled call's job was cancelled.
    const { rows } = await db.raw(
      `SELECT c.status, j.state, count(*)::int AS n FROM metered_calls c JOIN pgboss.job j ON j.name = 'metering.call.v1' AND j.data->>'call_id' = c.id::text
        GROUP BY 1, 2 ORDER BY 1, 2`,
    );
    const expected: Record<string, string> = { succeeded: 'completed', failed: 'failed', canceled: 'cancelled', refused: 'completed' };
    for (const row of rows as { status: string; state: string }[]) expect(row.state, `a ${row.status} call's job`).to.equal(expected[row.status]);
    expect(await db('metered_calls').whereIn('status', ['queued', 'running'])).to.have.length(0);
    expect(await db('credit_holds').where({ status: 'held' })).to.have.length(0);
    expect(await reconcileCredits(db)).to.deep.equal([]);
  });
});
