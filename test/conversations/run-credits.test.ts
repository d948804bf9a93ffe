import { expect } from 'chai';
import { reconcileCredits } from '../../src/credits/reconcile.ts';
import { addMember, createConversation, createOrganization, newUser, type TestUser } from '../support/factories.ts';
import { useServer } from '../support/suite.ts';

/** POST /conversations/{id}/run holds the turn's credits in the starting transaction: no credits → 402 at once, nothing started. */
describe('conversation runs: credits are held when the run starts', () => {
  const ctx = useServer();

  async function conversationOf(user: TestUser, org: string) {
    const conversation = await createConversation(ctx.server, user, org, { title: 'Trip' });
    const posted = await ctx.server.request('post', `/conversations/${conversation.id}/messages`, { token: user.token, body: { content: 'Plan Lisbon?' } });
    expect(posted.status).to.equal(201);
    return conversation.id as string;
  }
  const run = (user: TestUser, conversationId: string, body: Record<string, unknown>) =>
    ctx.server.request('post', `/conversations/${conversationId}/run`, { token: user.token, body });

  /** Nothing of a refused start exists: no run, no lock, no metered call, no hold, no job. */
  async function expectNothingStarted(org: string, conversationId: string) {
    expect(await ctx.db('chat_runs').where({ conversation_id: conversationId })).to.deep.equal([]);
    expect((await ctx.db('conversations').where({ id: conversationId }).first('active_run_id')).active_run_id).to.equal(null);
    expect(await ctx.db('metered_calls').where({ conversation_id: conversationId })).to.deep.equal([]);
    expect(await ctx.db('credit_holds').where({ organization_id: org, reason: 'chat_run' })).to.deep.equal([]);
    const jobs = await ctx.db('pgboss.job').where({ name: 'conversation.chat-run.v1' }).whereRaw(`data->>'run_id' IS NOT NULL`).select('data');
    const runIds = new Set((await ctx.db('chat_runs').select('id')).map((r) => r.id));
    expect(jobs.filter((job) => !runIds.has(job.data.run_id))).to.deep.equal([]);
  }

  it('402 naming spending_limit for a member whose limit is 0, and balance when the organization cannot cover it; nothing started', async () => {
    const owner = newUser();
    const member = newUser();
    const org = await createOrganization(ctx.server, owner);
    await addMember(ctx.db, org, member);
    const limited = await ctx.server.request('patch', `/organizations/${org}/members/${member.id}/credits`, {
      token: owner.token,
      body: { spending_limit: 0 },
    });
    expect(limited.status).to.equal(200);

    const members = await conversationOf(member, org);
    const refused = await run(member, members, {});
    expect(refused.status, JSON.stringify(refused.body)).to.equal(402);
    expect(refused.body.code).to.equal('payment_required');
    expect(refused.body.data.issues.map((issue: { path: string[] }) => issue.path)).to.deep.equal([['spending_limit']]);
    expect(refused.body.message).to.match(
      /^spending_limit: the member's spending limit is exhausted \(limit 0 credits this period, 0 used or held, \d+ needed\)$/,
    );
    await expectNothingStarted(org, members);

    const owners = await conversationOf(owner, org);
    const tooMuch = await run(owner, owners, { max_credits: 1_000_000 });
    expect(tooMuch.status).to.equal(402);
    expect(tooMuch.body.code).to.equal('payment_required');
    expect(tooMuch.body.data.issues.map((issue: { path: string[] }) => issue.path)).to.deep.equal([['balance']]);
    await expectNothingStarted(org, owners);
    expect(await reconcileCredits(ctx.db, org)).to.deep.equal([]);
  });

  it('201 with the hold already placed (its ceiling, the caller’s); stopping it while queued gives all of it back', async () => {
    const owner = newUser();
    const org = await createOrganization(ctx.server, owner);
    const conversationId = await conversationOf(owner, org);
    const started = await run(owner, conversationId, { max_credits: 40 });
    expect(started.status, JSON.stringify(started.body)).to.equal(201);
    const row = await ctx.db('chat_runs').where({ id: started.body.run.id }).first();
    expect(row.hold_id).to.be.a('string');
    const hold = await ctx.db('credit_holds').where({ id: row.hold_id }).first();
    expect(hold).to.include({ status: 'held', amount: 40, user_id: owner.id, run_id: row.id, reason: 'chat_run', conversation_id: conversationId });
    const balance = await ctx.server.request('get', `/organizations/${org}/credits`, { token: owner.token });
    expect(balance.body.held).to.equal(40);

    expect((await ctx.server.request('delete', `/conversations/${conversationId}/run`, { token: owner.token })).status).to.equal(204);
    expect(await ctx.db('chat_runs').where({ id: row.id }).first('status', 'credits_charged')).to.deep.equal({ status: 'stopped', credits_charged: 0 });
    expect(await ctx.db('credit_holds').where({ id: row.hold_id }).first('status', 'captured', 'released')).to.deep.include({ captured: 0, released: 40 });
    expect(await reconcileCredits(ctx.db, org)).to.deep.equal([]);
  });

  it('400 naming max_credits and its range for 0, 2^31 and anything above 1,000,000 (never 500)', async () => {
    const owner = newUser();
    const org = await createOrganization(ctx.server, owner);
    const conversationId = await conversationOf(owner, org);
    for (const max_credits of [0, 2 ** 31, 2 ** 53, 1_000_001, 1.5]) {
      const res = await run(owner, conversationId, { max_credits });
      expect(res.status, String(max_credits)).to.equal(400);
      expect(res.body.code).to.equal('validation_failed');
      expect(res.body.data.issues[0].path).to.deep.equal(['max_credits']);
      expect(res.body.message, String(max_credits)).to.match(/max_credits/);
    }
    const big = await run(owner, conversationId, { max_credits: 2 ** 31 });
    expect(big.body).to.deep.equal({
      code: 'validation_failed',
      message: 'max_credits: Too big: expected number to be <=1000000',
      data: { issues: [{ path: ['max_credits'], message: 'Too big: expected number to be <=1000000' }] },
    });
    await expectNothingStarted(org, conversationId);
  });
});
