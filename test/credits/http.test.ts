import { createHash } from 'node:crypto';
import { expect } from 'chai';
import { grantCredits } from '../../src/credits/ledger.ts';
import { reconcileCredits } from '../../src/credits/reconcile.ts';
import { createConversation } from '../support/factories.ts';
import { newUser, type TestUser } from '../support/server.ts';
import { useServer } from '../support/suite.ts';
import { addMember, balanceOf, createOrganization, entriesOf } from './support.ts';

const iso = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

describe('credits over HTTP', () => {
  const ctx = useServer({ STARTER_CREDITS: '1000' });

  const credits = (user: TestUser, org: string, sub = '') => ctx.server.request('get', `/organizations/${org}/credits${sub}`, { token: user.token });
  const run = (user: TestUser, org: string, step: 'begin' | 'capture' | 'settle', body: unknown, key?: string) =>
    ctx.server.request('post', `/organizations/${org}/credits/chat-runs/${step}`, {
      token: user.token,
      body,
      ...(key && { headers: { 'Idempotency-Key': key } }),
    });
  /** Costs are attributed only to a conversation (and message) the caller can read in the organization. */
  const conversationWithMessage = async (user: TestUser, org: string) => {
    const conversation = await createConversation(ctx.server, user, org);
    const message = await ctx.server.request('post', `/conversations/${conversation.id}/messages`, { token: user.token, body: { content: 'hi' } });
    return { conv: conversation.id as string, msg: message.body.message.id as string };
  };

  describe('GET /organizations/{id}/credits', () => {
    it('shows the starter grant as an integer balance; 404 for non-members', async () => {
      const owner = newUser();
      const org = await createOrganization(ctx.server, owner);
      const res = await credits(owner, org);
      expect(res.status).to.equal(200);
      expect(res.body).to.deep.include({ organization_id: org, balance: 1000, held: 0, available: 1000 });
      expect(res.body.grants).to.have.length(1);
      expect(res.body.grants[0]).to.deep.include({
        source: 'starter',
        amount: 1000,
        remaining: 1000,
        priority: 10,
        description: 'Starter credits',
        expires_at: null,
      });
      expect(res.body.grants[0].created_at).to.match(iso);
      const outsider = await credits(newUser(), org);
      const missing = await credits(newUser(), 'no-such-org');
      expect(outsider.status).to.equal(404);
      expect(outsider.body).to.deep.equal(missing.body);
      expect(outsider.body).to.deep.equal({ code: 'not_found', message: 'organization not found', data: { issues: [] } });
    });

    it('reports the calendar-month cycle with what was granted and used in it', async () => {
      const owner = newUser();
      const org = await createOrganization(ctx.server, owner);
      await run(owner, org, 'begin', { run_id: 'r1', amount: 100 });
      await run(owner, org, 'capture', { run_id: 'r1', amount: 30, tool_call_id: 't1' });
      const res = await credits(owner, org, '/cycle');
      expect(res.status).to.equal(200);
      const now = new Date();
      const start = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)).toISOString();
      const end = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)).toISOString();
      expect(res.body).to.deep.equal({
        organization_id: org,
        period_start: start,
        period_end: end,
        granted: 1000,
        used: 30,
        expired: 0,
        held: 70,
        balance: 970,
        available: 900,
      });
    });
  });

  describe('chat runs', () => {
    it('begin → partial captures → settle, with replays writing nothing new', async () => {
      const owner = newUser();
      const org = await createOrganization(ctx.server, owner);
      const { conv, msg } = await conversationWithMessage(owner, org);
      const begin = await run(owner, org, 'begin', { run_id: 'run-1', amount: 200, conversation_id: conv, message_id: msg });
      expect(begin.status).to.equal(201);
      const hold = begin.body.hold;
      expect(hold).to.deep.include({
        run_id: 'run-1',
        status: 'held',
        amount: 200,
        captured: 0,
        released: 0,
        remaining: 200,
        user_id: owner.id,
        conversation_id: conv,
        message_id: msg,
        resolved_at: null,
      });
      expect(Object.keys(hold).sort()).to.deep.equal([
        'amount',
        'captured',
        'conversation_id',
        'created_at',
        'expires_at',
        'id',
        'message_id',
        'released',
        'remaining',
        'resolved_at',
        'run_id',
        'status',
        'user_id',
      ]);
      expect((await credits(owner, org)).body).to.deep.include({ balance: 1000, held: 200, available: 800 });

      const again = await run(owner, org, 'begin', { run_id: 'run-1', amount: 200, conversation_id: conv, message_id: msg });
      expect(again.status).to.equal(201);
      expect(again.body).to.deep.equal(begin.body);
      const other = await run(owner, org, 'begin', { run_id: 'run-1', amount: 300 });
      expect(other.status).to.equal(409);
      expect(other.body.data.issues[0].path).to.deep.equal(['run_id']);

      const c1 = await run(owner, org, 'capture', { run_id: 'run-1', amount: 50, tool_call_id: 'tool-a', description: 'search' });
      expect(c1.status).to.equal(200);
      expect(c1.body.hold).to.deep.include({ status: 'held', captured: 50, remaining: 150 });
      expect(c1.body.capture).to.deep.include({ capture_id: 'tool-a', amount: 50, tool_call_id: 'tool-a', description: 'search' });
      const count = (await entriesOf(ctx.db, org)).length;
      const c1again = await run(owner, org, 'capture', { run_id: 'run-1', amount: 50, tool_call_id: 'tool-a', description: 'search' });
      expect(c1again.status).to.equal(200);
      expect(c1again.body.capture).to.deep.equal(c1.body.capture);
      expect((await entriesOf(ctx.db, org)).length).to.equal(count);
      const c1other = await run(owner, org, 'capture', { run_id: 'run-1', amount: 60, tool_call_id: 'tool-a' });
      expect(c1other.status).to.equal(409);
      const over = await run(owner, org, 'capture', { run_id: 'run-1', amount: 151, capture_id: 'big' });
      expect(over.status).to.equal(409);
      expect(over.body.message).to.equal('amount: 151 credits exceed what is left on the hold (150)');
      const c2 = await run(owner, org, 'capture', { run_id: 'run-1', amount: 20, capture_id: 'final-answer' });
      expect(c2.body.hold).to.deep.include({ captured: 70, remaining: 130 });

      const settle = await run(owner, org, 'settle', { run_id: 'run-1' });
      expect(settle.status).to.equal(200);
      expect(settle.body.hold).to.deep.include({ status: 'captured', amount: 200, captured: 70, released: 130, remaining: 0 });
      expect(settle.body.hold.resolved_at).to.match(iso);
      const settleAgain = await run(owner, org, 'settle', { run_id: 'run-1' });
      expect(settleAgain.body).to.deep.equal(settle.body);
      const late = await run(owner, org, 'capture', { run_id: 'run-1', amount: 1, capture_id: 'late' });
      expect(late.status).to.equal(409);
      expect(late.body).to.deep.equal({
        code: 'conflict',
        message: 'hold: the hold is already captured; it resolves only once',
        data: { issues: [{ path: ['hold'], message: 'hold: the hold is already captured; it resolves only once' }] },
      });

      expect((await credits(owner, org)).body).to.deep.include({ balance: 930, held: 0, available: 930 });
      expect(await balanceOf(ctx.db, org)).to.deep.equal({ granted: 1000, captured: 70, held: 0, expired: 0 });
      expect(await reconcileCredits(ctx.db, org)).to.deep.equal([]);
    });

    it('402 when the workspace balance cannot cover the run, naming the balance', async () => {
      const owner = newUser();
      const org = await createOrganization(ctx.server, owner);
      const res = await run(owner, org, 'begin', { run_id: 'huge', amount: 1001 });
      expect(res.status).to.equal(402);
      const message = 'balance: the workspace balance is exhausted (1000 credits available, 1001 needed)';
      expect(res.body).to.deep.equal({ code: 'payment_required', message, data: { issues: [{ path: ['balance'], message }] } });
      expect(await ctx.db('credit_holds').where({ organization_id: org }).count('* as n').first()).to.deep.equal({ n: 0 });
    });

    it('hides runs of other members (404) and validates bodies (400 naming the field)', async () => {
      const owner = newUser();
      const member = newUser();
      const org = await createOrganization(ctx.server, owner);
      await addMember(ctx.db, org, member);
      await run(owner, org, 'begin', { run_id: 'owners', amount: 10 });
      const theirs = await run(member, org, 'capture', { run_id: 'owners', amount: 1 });
      expect(theirs.status).to.equal(404);
      expect(theirs.body.message).to.equal('chat run not found');
      const bad = await run(owner, org, 'begin', { run_id: 'x', amount: 0 });
      expect(bad.status).to.equal(400);
      expect(bad.body.data.issues[0].path).to.deep.equal(['amount']);
      const unknown = await run(owner, org, 'settle', { run_id: 'owners', extra: true });
      expect(unknown.status).to.equal(400);
    });
  });

  describe('Idempotency-Key', () => {
    it('replays the stored response for the same body, 422 for another body, scoped per organization', async () => {
      const owner = newUser();
      const org = await createOrganization(ctx.server, owner);
      const first = await run(owner, org, 'begin', { run_id: 'idem-1', amount: 10 }, 'key-1');
      expect(first.status).to.equal(201);
      const count = (await entriesOf(ctx.db, org)).length;
      const replay = await run(owner, org, 'begin', { amount: 10, run_id: 'idem-1' }, 'key-1');
      expect(replay.status).to.equal(201);
      expect(replay.body).to.deep.equal(first.body);
      expect(replay.headers.get('idempotent-replayed')).to.equal('true');
      expect(first.headers.get('idempotent-replayed')).to.equal(null);
      expect((await entriesOf(ctx.db, org)).length).to.equal(count);

      const different = await run(owner, org, 'begin', { run_id: 'idem-2', amount: 10 }, 'key-1');
      expect(different.status).to.equal(422);
      expect(different.body.code).to.equal('idempotency_key_reused');
      expect(different.body.data.issues[0].path).to.deep.equal(['Idempotency-Key']);
      expect(await ctx.db('credit_holds').where({ organization_id: org, run_id: 'idem-2' }).first()).to.equal(undefined);

      // Captures without a capture_id are new each time, unless the key makes the retry a replay.
      const cap = await run(owner, org, 'capture', { run_id: 'idem-1', amount: 3 }, 'cap-1');
      const capAgain = await run(owner, org, 'capture', { run_id: 'idem-1', amount: 3 }, 'cap-1');
      expect(capAgain.body).to.deep.equal(cap.body);
      expect((await balanceOf(ctx.db, org)).captured).to.equal(3);

      // The same key in another organization is another request.
      const org2 = await createOrganization(ctx.server, owner, 'Second');
      const elsewhere = await run(owner, org2, 'begin', { run_id: 'idem-2', amount: 10 }, 'key-1');
      expect(elsewhere.status).to.equal(201);
      expect(elsewhere.body.hold.id).to.not.equal(first.body.hold.id);
    });

    it('answers 409 while a request with the same key is still in flight', async () => {
      const owner = newUser();
      const org = await createOrganization(ctx.server, owner);
      // Hold the key's lock in another session, as a running request would.
      await ctx.db.transaction(async (trx) => {
        await trx.raw('SELECT pg_advisory_xact_lock(hashtextextended(?, 1))', [
          `idempotency:${org}:${owner.id}:${createHash('sha256').update('busy-key').digest('hex')}`,
        ]);
        const res = await run(owner, org, 'begin', { run_id: 'busy', amount: 5 }, 'busy-key');
        expect(res.status).to.equal(409);
        expect(res.body.message).to.match(/^Idempotency-Key: a request with this key is still in progress/);
      });
      const after = await run(owner, org, 'begin', { run_id: 'busy', amount: 5 }, 'busy-key');
      expect(after.status).to.equal(201);
    });

    it('does not store failures: a 402 retried after a top-up succeeds', async () => {
      const owner = newUser();
      const org = await createOrganization(ctx.server, owner);
      const refused = await run(owner, org, 'begin', { run_id: 'later', amount: 1500 }, 'topup');
      expect(refused.status).to.equal(402);
      await ctx.db.transaction((trx) => grantCredits(trx, { organizationId: org, source: 'purchase', amount: 1000, description: 'Top-up' }));
      const ok = await run(owner, org, 'begin', { run_id: 'later', amount: 1500 }, 'topup');
      expect(ok.status).to.equal(201);
    });
  });

  describe('transactions', () => {
    it('lists the ledger newest first, filtered and keyset-paged with every entry once', async () => {
      const owner = newUser();
      const member = newUser();
      const org = await createOrganization(ctx.server, owner);
      await addMember(ctx.db, org, member);
      const convA = (await conversationWithMessage(owner, org)).conv;
      const convB = (await conversationWithMessage(member, org)).conv;
      await run(owner, org, 'begin', { run_id: 'a', amount: 40, conversation_id: convA });
      await run(member, org, 'begin', { run_id: 'b', amount: 30, conversation_id: convB });
      await run(owner, org, 'capture', { run_id: 'a', amount: 15, tool_call_id: 'tool-1' });
      await run(member, org, 'settle', { run_id: 'b' });
      const all = await ctx.server.request('get', `/organizations/${org}/credits/transactions`, { token: member.token });
      expect(all.status).to.equal(200);
      expect(all.body.items.map((t: any) => [t.kind, t.amount, t.balance_change, t.available_change])).to.deep.equal([
        ['release', 30, 0, 30],
        ['capture', 15, -15, 0],
        ['hold', 30, 0, -30],
        ['hold', 40, 0, -40],
        ['grant', 1000, 1000, 1000],
      ]);
      expect(all.body.items[1]).to.deep.include({
        run_id: 'a',
        user_id: owner.id,
        conversation_id: convA,
        tool_call_id: 'tool-1',
        from_account: 'held',
        to_account: 'spent',
      });
      expect(all.body.next_cursor).to.equal(null);

      const q = (query: Record<string, string | number>) =>
        ctx.server.request('get', `/organizations/${org}/credits/transactions`, { token: owner.token, query });
      expect((await q({ kind: 'hold' })).body.items.map((t: any) => t.run_id)).to.deep.equal(['b', 'a']);
      expect((await q({ user_id: member.id })).body.items.map((t: any) => t.kind)).to.deep.equal(['release', 'hold']);
      expect((await q({ conversation_id: convA })).body.items.map((t: any) => t.kind)).to.deep.equal(['capture', 'hold']);
      expect((await q({ tool_call_id: 'tool-1' })).body.items.map((t: any) => t.kind)).to.deep.equal(['capture']);
      expect((await q({ until: '2000-01-01T00:00:00Z' })).body.items).to.deep.equal([]);
      expect((await q({ kind: 'bogus' })).status).to.equal(400);

      const seen: string[] = [];
      let cursor: string | undefined;
      do {
        const page = await q({ limit: 2, ...(cursor && { cursor }) });
        seen.push(...page.body.items.map((t: any) => t.id));
        cursor = page.body.next_cursor ?? undefined;
        if (cursor) await run(owner, org, 'capture', { run_id: 'a', amount: 1, capture_id: `during-${seen.length}` }); // new rows do not shift pages
      } while (cursor);
      expect(seen).to.deep.equal(all.body.items.map((t: any) => t.id));
    });
  });

  describe('member spending limits', () => {
    it('members read their own; credits.manage sets a limit; a hold beyond it is 402 naming the limit', async () => {
      const owner = newUser();
      const member = newUser();
      const org = await createOrganization(ctx.server, owner);
      await addMember(ctx.db, org, member);
      const path = `/organizations/${org}/members/${member.id}/credits`;
      const mine = await ctx.server.request('get', path, { token: member.token });
      expect(mine.status).to.equal(200);
      expect(mine.body).to.deep.include({ organization_id: org, user_id: member.id, spending_limit: null, spent: 0, held: 0, remaining: null });

      const forbidden = await ctx.server.request('patch', path, { token: member.token, body: { spending_limit: 1000 } });
      expect(forbidden.status).to.equal(403);
      const set = await ctx.server.request('patch', path, { token: owner.token, body: { spending_limit: 50 } });
      expect(set.status).to.equal(200);
      expect(set.body).to.deep.include({ spending_limit: 50, remaining: 50 });
      expect(await ctx.db('activity_events').where({ organization_id: org, action: 'member.spending_limit_changed' }).pluck('data')).to.deep.equal([
        { spending_limit: 50 },
      ]);

      expect((await run(member, org, 'begin', { run_id: 'm1', amount: 30 })).status).to.equal(201);
      await run(member, org, 'capture', { run_id: 'm1', amount: 20, capture_id: 'c' });
      await run(member, org, 'settle', { run_id: 'm1' });
      const refused = await run(member, org, 'begin', { run_id: 'm2', amount: 31 });
      expect(refused.status).to.equal(402);
      expect(refused.body.data.issues[0].path).to.deep.equal(['spending_limit']);
      expect(refused.body.message).to.equal(
        "spending_limit: the member's spending limit is exhausted (limit 50 credits this period, 20 used or held, 31 needed)",
      );
      expect((await run(member, org, 'begin', { run_id: 'm3', amount: 30 })).status).to.equal(201);
      const now = await ctx.server.request('get', path, { token: owner.token });
      expect(now.body).to.deep.include({ spending_limit: 50, spent: 20, held: 30, remaining: 0 });

      // The owner has no limit; removing the member's lets them spend again.
      expect((await run(owner, org, 'begin', { run_id: 'o1', amount: 500 })).status).to.equal(201);
      await ctx.server.request('patch', path, { token: owner.token, body: { spending_limit: null } });
      expect((await run(member, org, 'begin', { run_id: 'm4', amount: 100 })).status).to.equal(201);

      expect((await ctx.server.request('get', `/organizations/${org}/members/nobody/credits`, { token: owner.token })).status).to.equal(404);
      expect((await ctx.server.request('patch', path, { token: owner.token, body: { spending_limit: -1 } })).status).to.equal(400);
    });
  });
});
