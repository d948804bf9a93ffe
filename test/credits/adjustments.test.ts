import { expect } from 'chai';
import { grantCredits } from '../../src/credits/ledger.ts';
import { reconcileCredits } from '../../src/credits/reconcile.ts';
import { newUser, type TestUser } from '../support/server.ts';
import { useServer } from '../support/suite.ts';
import { addMember, balanceOf, createOrganization, entriesOf } from './support.ts';

const HOUR = 3600_000;

describe('credit adjustments', () => {
  const ctx = useServer({ STARTER_CREDITS: '1000' });

  const adjust = (user: TestUser, org: string, body: unknown, key?: string) =>
    ctx.server.request('post', `/organizations/${org}/credits/adjustments`, { token: user.token, body, ...(key && { headers: { 'Idempotency-Key': key } }) });
  const activityOf = (org: string) =>
    ctx.db('activity_events').where({ organization_id: org, action: 'credits.adjusted' }).select('actor_id', 'subject_type', 'subject_id', 'data');

  it('a positive adjustment is a grant of source adjustment with one issued → available row', async () => {
    const owner = newUser();
    const member = newUser();
    const org = await createOrganization(ctx.server, owner);
    await addMember(ctx.db, org, member);
    const res = await adjust(owner, org, { amount: 250, reason: 'Goodwill after outage', user_id: member.id });
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    expect(Object.keys(res.body).sort()).to.deep.equal(['credits', 'transactions']);
    expect(res.body.credits).to.deep.include({ organization_id: org, balance: 1250, held: 0, available: 1250 });
    const grant = res.body.credits.grants.find((g: any) => g.source === 'adjustment');
    expect(grant).to.deep.include({ source: 'adjustment', amount: 250, remaining: 250, priority: 50, description: 'Goodwill after outage', expires_at: null });
    expect(res.body.transactions).to.have.length(1);
    expect(res.body.transactions[0]).to.deep.include({
      kind: 'adjustment',
      amount: 250,
      from_account: 'issued',
      to_account: 'available',
      balance_change: 250,
      available_change: 250,
      grant_id: grant.id,
      user_id: member.id,
      description: 'Goodwill after outage',
      metadata: { reason: 'Goodwill after outage', adjusted_by: owner.id },
    });
    expect(await balanceOf(ctx.db, org)).to.deep.equal({ granted: 1250, captured: 0, held: 0, expired: 0 });
    expect(await activityOf(org)).to.deep.equal([
      { actor_id: owner.id, subject_type: 'organization', subject_id: org, data: { amount: 250, reason: 'Goodwill after outage', user_id: member.id } },
    ]);
    expect(await reconcileCredits(ctx.db, org)).to.deep.equal([]);
  });

  it('a negative adjustment draws from grants earliest expiry first and moves available → issued', async () => {
    const owner = newUser();
    const org = await createOrganization(ctx.server, owner);
    // Created later but expiring sooner: the plan credits are drawn first.
    const bought = await ctx.db.transaction((trx) =>
      grantCredits(trx, { organizationId: org, source: 'purchase', amount: 30, expiresAt: new Date(Date.now() + 2 * HOUR), description: 'Bought' }),
    );
    const plan = await ctx.db.transaction((trx) =>
      grantCredits(trx, { organizationId: org, source: 'plan_cycle', amount: 50, expiresAt: new Date(Date.now() + HOUR), description: 'Plan' }),
    );
    const res = await adjust(owner, org, { amount: -70, reason: 'Duplicate purchase' });
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    expect(
      res.body.transactions.map((t: any) => [t.kind, t.amount, t.from_account, t.to_account, t.balance_change, t.available_change, t.grant_id, t.user_id]),
    ).to.deep.equal([
      ['adjustment', 50, 'available', 'issued', -50, -50, plan.id, owner.id],
      ['adjustment', 20, 'available', 'issued', -20, -20, bought.id, owner.id],
    ]);
    expect(res.body.credits).to.deep.include({ balance: 1010, held: 0, available: 1010 });
    expect(res.body.credits.grants.map((g: any) => [g.source, g.remaining])).to.deep.equal([
      ['plan_cycle', 0],
      ['purchase', 10],
      ['starter', 1000],
    ]);
    expect(await balanceOf(ctx.db, org)).to.deep.equal({ granted: 1010, captured: 0, held: 0, expired: 0 });
    expect(await ctx.db('credit_grants').where({ id: plan.id }).first('remaining')).to.deep.equal({ remaining: 0 });
    expect(await activityOf(org)).to.have.length(1);
    expect(await reconcileCredits(ctx.db, org)).to.deep.equal([]);
  });

  it('never takes more than available: 409 naming amount, nothing written; exactly available succeeds', async () => {
    const owner = newUser();
    const org = await createOrganization(ctx.server, owner);
    const begin = await ctx.server.request('post', `/organizations/${org}/credits/chat-runs/begin`, {
      token: owner.token,
      body: { run_id: 'r1', amount: 900 },
    });
    expect(begin.status).to.equal(201);
    const before = await entriesOf(ctx.db, org);
    const tooMuch = await adjust(owner, org, { amount: -101, reason: 'Too much' });
    expect(tooMuch.status).to.equal(409);
    expect(tooMuch.body).to.deep.equal({
      code: 'conflict',
      message: 'amount: cannot take back 101 credits, only 100 are available',
      data: { issues: [{ path: ['amount'], message: 'amount: cannot take back 101 credits, only 100 are available' }] },
    });
    expect(await entriesOf(ctx.db, org)).to.deep.equal(before);
    expect(await activityOf(org)).to.deep.equal([]);
    const all = await adjust(owner, org, { amount: -100, reason: 'All that is free' });
    expect(all.status).to.equal(201);
    expect(all.body.credits).to.deep.include({ balance: 900, held: 900, available: 0 });
    expect(await balanceOf(ctx.db, org)).to.deep.equal({ granted: 900, captured: 0, held: 900, expired: 0 });
    expect(await reconcileCredits(ctx.db, org)).to.deep.equal([]);
  });

  it('concurrent debits against 1000 credits: exactly 10 of 20 take 100, the rest get 409, never below zero', async () => {
    const owner = newUser();
    const org = await createOrganization(ctx.server, owner);
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => adjust(owner, org, { amount: -100, reason: `Debit ${i}` })));
    expect(results.filter((r) => r.status === 201)).to.have.length(10);
    expect(results.filter((r) => r.status === 409).map((r) => r.body.data.issues[0].path)).to.deep.equal(Array.from({ length: 10 }, () => ['amount']));
    expect(await balanceOf(ctx.db, org)).to.deep.equal({ granted: 0, captured: 0, held: 0, expired: 0 });
    expect(await reconcileCredits(ctx.db, org)).to.deep.equal([]);
  });

  it('needs credits.manage (403), hides the organization from non-members (404) and validates the body', async () => {
    const owner = newUser();
    const member = newUser();
    const admin = newUser();
    const org = await createOrganization(ctx.server, owner);
    await addMember(ctx.db, org, member, 'member');
    await addMember(ctx.db, org, admin, 'admin');
    const forbidden = await adjust(member, org, { amount: 10, reason: 'Me' });
    expect(forbidden.status).to.equal(403);
    expect(forbidden.body.code).to.equal('forbidden');
    const outsider = await adjust(newUser(), org, { amount: 10, reason: 'Me' });
    const missing = await adjust(owner, 'no-such-org', { amount: 10, reason: 'Me' });
    expect(outsider.status).to.equal(404);
    expect(outsider.body).to.deep.equal(missing.body);
    const notMember = await adjust(owner, org, { amount: 10, reason: 'Someone', user_id: 'user_nobody' });
    expect(notMember.status).to.equal(404);
    expect(notMember.body).to.deep.equal({ code: 'not_found', message: 'member not found', data: { issues: [] } });
    for (const [body, path] of [
      [{ amount: 0, reason: 'Nothing' }, 'amount'],
      [{ amount: 1.5, reason: 'Half' }, 'amount'],
      [{ amount: 10 }, 'reason'],
      [{ amount: 10, reason: '   ' }, 'reason'],
      [{ amount: 10, reason: 'x', extra: 1 }, ''],
    ] as const) {
      const res = await adjust(owner, org, body);
      expect(res.status, JSON.stringify(body)).to.equal(400);
      expect(res.body.code).to.equal('validation_failed');
      if (path) expect(res.body.data.issues[0].path).to.deep.equal([path]);
    }
    expect((await adjust(admin, org, { amount: 5, reason: 'Admins may' })).status).to.equal(201);
    expect(await balanceOf(ctx.db, org)).to.deep.equal({ granted: 1005, captured: 0, held: 0, expired: 0 });
  });

  it('honours Idempotency-Key: same body replays without a second row, another body is a 422', async () => {
    const owner = newUser();
    const org = await createOrganization(ctx.server, owner);
    const first = await adjust(owner, org, { amount: -40, reason: 'Refund reversal' }, 'adj-1');
    const again = await adjust(owner, org, { reason: 'Refund reversal', amount: -40 }, 'adj-1');
    expect(first.status).to.equal(201);
    expect(again.status).to.equal(201);
    expect(again.body).to.deep.equal(first.body);
    const other = await adjust(owner, org, { amount: -41, reason: 'Refund reversal' }, 'adj-1');
    expect(other.status).to.equal(422);
    expect(other.body.data.issues[0].path).to.deep.equal(['Idempotency-Key']);
    expect((await entriesOf(ctx.db, org)).filter((e) => e.kind === 'adjustment')).to.have.length(1);
    expect(await activityOf(org)).to.have.length(1);
    expect(await balanceOf(ctx.db, org)).to.deep.equal({ granted: 960, captured: 0, held: 0, expired: 0 });
    expect(await reconcileCredits(ctx.db, org)).to.deep.equal([]);
  });
});
