import { expect } from 'chai';
import { placeHold } from '../../src/credits/holds.ts';
import { captureHold } from '../../src/credits/hold-resolutions.ts';
import { createCreditPeriods } from '../../src/app/credit-periods.ts';
import { addMember, createOrganization } from '../support/organizations.ts';
import { newUser, type ApiResponse, type TestUser } from '../support/server.ts';
import { useServer } from '../support/suite.ts';

const creditPeriods = createCreditPeriods();

function expectError(res: ApiResponse, status: number, code: string) {
  expect(res.status, JSON.stringify(res.body)).to.equal(status);
  expect(res.body.code).to.equal(code);
  expect(res.body.data.issues).to.be.an('array');
}

const DAY = 86_400_000;
const isoDay = (offsetDays: number) => new Date(Date.now() + offsetDays * DAY).toISOString().slice(0, 10);

describe('reports', () => {
  const ctx = useServer({ STARTER_CREDITS: '1000' }, { pool: 4 });
  let owner: TestUser;
  let member: TestUser;
  let outsider: TestUser;
  let org: string;

  beforeEach(async () => {
    owner = newUser({ name: 'Olga Owner' });
    member = newUser({ name: 'Max Member' });
    outsider = newUser();
    org = await createOrganization(ctx.server, owner);
    await addMember(ctx.db, org, member, 'member');
  });

  /** Spends through the credits domain's internal API: a hold, then a capture of part of it. */
  async function spend(user: TestUser, reason: string, hold: number, captured: number) {
    await ctx.db.transaction(async (trx) => {
      const placed = await placeHold(trx, creditPeriods, { organizationId: org, userId: user.id, amount: hold, reason });
      await captureHold(trx, placed.id, captured);
    });
  }

  describe('POST /reports/query', () => {
    beforeEach(async () => {
      await spend(owner, 'chat_run', 100, 40);
      await spend(owner, 'social_read', 50, 50);
      await spend(member, 'chat_run', 30, 25);
    });

    const query = (user: TestUser, body: Record<string, unknown>) =>
      ctx.server.request('post', '/reports/query', { token: user.token, body: { organization_id: org, from: isoDay(-1), to: isoDay(0), ...body } });

    it('sums captures per member, matching the ledger', async () => {
      const res = await query(owner, { group_by: 'member' });
      expect(res.status).to.equal(200);
      const report = res.body.report;
      expect(Object.keys(report).sort()).to.deep.equal(['from', 'group_by', 'kinds', 'organization_id', 'rows', 'to', 'total_credits']);
      expect(report).to.include({ organization_id: org, group_by: 'member', kinds: null, total_credits: 115 });
      expect(report.from).to.equal(`${isoDay(-1)}T00:00:00.000Z`);
      expect(report.to).to.equal(`${isoDay(1)}T00:00:00.000Z`);
      expect(report.rows).to.deep.equal([
        { key: owner.id, label: 'Olga Owner', credits: 90, captures: 2 },
        { key: member.id, label: 'Max Member', credits: 25, captures: 1 },
      ]);
      const ledger = await ctx.db('credit_ledger_entries').where({ organization_id: org, kind: 'capture' }).sum('amount as total').first();
      expect(Number(ledger!.total)).to.equal(report.total_credits);
    });

    it('groups by kind, day and model, and filters by kinds', async () => {
      const byKind = await query(member, { group_by: 'kind' });
      expect(byKind.body.report.rows).to.deep.equal([
        { key: 'chat_run', label: null, credits: 65, captures: 2 },
        { key: 'social_read', label: null, credits: 50, captures: 1 },
      ]);
      const byDay = await query(owner, { group_by: 'day' });
      expect(byDay.body.report.rows).to.deep.equal([{ key: isoDay(0), label: null, credits: 115, captures: 3 }]);
      const byModel = await query(owner, { group_by: 'model' });
      expect(byModel.body.report.rows).to.deep.equal([{ key: 'unspecified', label: null, credits: 115, captures: 3 }]);
      const chats = await query(owner, { group_by: 'member', kinds: ['chat_run'] });
      expect(chats.body.report).to.include({ total_credits: 65 });
      expect(chats.body.report.kinds).to.deep.equal(['chat_run']);
      expect(chats.body.report.rows.map((r: any) => [r.key, r.credits])).to.deep.equal([
        [owner.id, 40],
        [member.id, 25],
      ]);
    });

    it('excludes captures outside the range', async () => {
      const past = await query(owner, { group_by: 'day', from: isoDay(-10), to: isoDay(-2) });
      expect(past.body.report).to.include({ total_credits: 0 });
      expect(past.body.report.rows).to.deep.equal([]);
      const until = new Date(Date.now() - 60_000).toISOString();
      const exclusive = await query(owner, { group_by: 'day', from: isoDay(-1), to: until });
      expect(exclusive.body.report.total_credits).to.equal(0);
    });

    it('validates the range (≤ 366 days, to after from), the fields, and access', async () => {
      const tooLong = await query(owner, { group_by: 'day', from: '2025-01-01', to: '2026-01-02' });
      expectError(tooLong, 400, 'validation_failed');
      expect(tooLong.body.data.issues[0].path).to.deep.equal(['to']);
      expect((await query(owner, { group_by: 'day', from: '2025-01-01', to: '2026-01-01' })).status).to.equal(200); // 366 days
      expectError(await query(owner, { group_by: 'day', from: isoDay(0), to: isoDay(-1) }), 400, 'validation_failed');
      expectError(await query(owner, { group_by: 'week' }), 400, 'validation_failed');
      expectError(await query(owner, { group_by: 'day', from: 'yesterday' }), 400, 'validation_failed');
      expectError(await query(owner, { group_by: 'day', extra: true }), 400, 'validation_failed');
      expectError(await query(outsider, { group_by: 'day' }), 403, 'forbidden');
      await addMember(ctx.db, org, outsider, 'viewer-ish'); // a custom role with no permissions
      expectError(await query(outsider, { group_by: 'day' }), 403, 'forbidden');
    });
  });

  describe('POST /reports/inventory', () => {
    it('counts members and invitations (and other resources present) by type, state and project', async () => {
      await ctx.db('invitations').insert([
        { organization_id: org, email: 'a@x.test', role: 'member', invited_by_id: owner.id, expires_at: new Date(Date.now() + DAY) },
        { organization_id: org, email: 'b@x.test', role: 'member', invited_by_id: owner.id, expires_at: new Date(Date.now() + DAY), status: 'declined' },
      ]);
      const res = await ctx.server.request('post', '/reports/inventory', { token: member.token, body: { organization_id: org } });
      expect(res.status).to.equal(200);
      const inventory = res.body.inventory;
      expect(Object.keys(inventory).sort()).to.deep.equal(['generated_at', 'items', 'organization_id', 'totals']);
      expect(inventory.totals).to.deep.equal({ invitation: 2, member: 2 });
      expect(inventory.items).to.deep.equal([
        { type: 'invitation', state: 'declined', project_id: null, count: 1 },
        { type: 'invitation', state: 'pending', project_id: null, count: 1 },
        { type: 'member', state: 'active', project_id: null, count: 2 },
      ]);
    });

    it('checks the body and access', async () => {
      expectError(await ctx.server.request('post', '/reports/inventory', { token: owner.token, body: {} }), 400, 'validation_failed');
      expectError(await ctx.server.request('post', '/reports/inventory', { token: outsider.token, body: { organization_id: org } }), 403, 'forbidden');
    });
  });

  describe('GET /organizations/{id}/reports/balance', () => {
    it('reports balance, held, available, burn rate and runway from the ledger', async () => {
      const idle = await ctx.server.request('get', `/organizations/${org}/reports/balance`, { token: member.token });
      expect(idle.status).to.equal(200);
      expect(idle.body.report).to.deep.include({
        organization_id: org,
        balance: 1000,
        held: 0,
        available: 1000,
        burn_rate: { last_7_days: 0, last_30_days: 0 },
        runway_days: { last_7_days: null, last_30_days: null },
      });

      await spend(owner, 'chat_run', 300, 210);
      await ctx.db.transaction((trx) => placeHold(trx, creditPeriods, { organizationId: org, userId: member.id, amount: 90, reason: 'chat_run' }));
      const res = await ctx.server.request('get', `/organizations/${org}/reports/balance`, { token: member.token });
      const report = res.body.report;
      expect(Object.keys(report).sort()).to.deep.equal(['as_of', 'available', 'balance', 'burn_rate', 'held', 'organization_id', 'runway_days', 'spent']);
      expect(report).to.include({ balance: 790, held: 90, available: 700 });
      expect(report.spent).to.deep.equal({ last_7_days: 210, last_30_days: 210 });
      expect(report.burn_rate).to.deep.equal({ last_7_days: 30, last_30_days: 7 });
      expect(report.runway_days).to.deep.equal({ last_7_days: 23.3, last_30_days: 100 });
      const credits = await ctx.server.request('get', `/organizations/${org}/credits`, { token: owner.token });
      if (credits.status === 200)
        expect({ balance: credits.body.balance, held: credits.body.held, available: credits.body.available }).to.deep.equal({
          balance: 790,
          held: 90,
          available: 700,
        });
    });

    it('is 404 for non-members', async () => {
      expectError(await ctx.server.request('get', `/organizations/${org}/reports/balance`, { token: outsider.token }), 404, 'not_found');
    });
  });
});
