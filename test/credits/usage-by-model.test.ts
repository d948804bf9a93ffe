import { expect } from 'chai';
import { newUser, type TestUser } from '../support/server.ts';
import { useServer } from '../support/suite.ts';
import { createOrganization } from './support.ts';

const today = () => new Date().toISOString().slice(0, 10);

describe('usage by model', () => {
  const ctx = useServer({ STARTER_CREDITS: '1000' });

  const run = (user: TestUser, org: string, step: 'begin' | 'capture' | 'settle', body: unknown) =>
    ctx.server.request('post', `/organizations/${org}/credits/chat-runs/${step}`, { token: user.token, body });

  it('a capture with `model` stamps metadata.model on its ledger rows and POST /reports/query groups by it', async () => {
    const owner = newUser();
    const org = await createOrganization(ctx.server, owner);
    expect((await run(owner, org, 'begin', { run_id: 'r1', amount: 200 })).status).to.equal(201);
    expect((await run(owner, org, 'begin', { run_id: 'r2', amount: 50 })).status).to.equal(201);
    for (const body of [
      { run_id: 'r1', amount: 30, tool_call_id: 't1', model: 'model-alpha' },
      { run_id: 'r1', amount: 20, tool_call_id: 't2', model: 'model-beta' },
      { run_id: 'r1', amount: 5, tool_call_id: 't3' },
      { run_id: 'r2', amount: 10, tool_call_id: 't4', model: 'model-alpha' },
    ]) {
      const res = await run(owner, org, 'capture', body);
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
    }
    await run(owner, org, 'settle', { run_id: 'r1' });

    const captures = await ctx
      .db('credit_ledger_entries')
      .where({ organization_id: org, kind: 'capture' })
      .orderBy('seq')
      .select('tool_call_id', 'amount', 'metadata');
    expect(captures).to.deep.equal([
      { tool_call_id: 't1', amount: 30, metadata: { model: 'model-alpha' } },
      { tool_call_id: 't2', amount: 20, metadata: { model: 'model-beta' } },
      { tool_call_id: 't3', amount: 5, metadata: {} },
      { tool_call_id: 't4', amount: 10, metadata: { model: 'model-alpha' } },
    ]);

    const report = await ctx.server.request('post', '/reports/query', {
      token: owner.token,
      body: { organization_id: org, from: today(), to: today(), group_by: 'model' },
    });
    expect(report.status, JSON.stringify(report.body)).to.equal(200);
    expect(report.body.report).to.include({ group_by: 'model', total_credits: 65 });
    expect(report.body.report.rows).to.deep.equal([
      { key: 'model-alpha', label: null, credits: 40, captures: 2 },
      { key: 'model-beta', label: null, credits: 20, captures: 1 },
      { key: 'unspecified', label: null, credits: 5, captures: 1 },
    ]);
  });

  it('refuses a model longer than 100 characters or empty, naming `model`', async () => {
    const owner = newUser();
    const org = await createOrganization(ctx.server, owner);
    await run(owner, org, 'begin', { run_id: 'r1', amount: 100 });
    for (const model of ['m'.repeat(101), '  ']) {
      const res = await run(owner, org, 'capture', { run_id: 'r1', amount: 1, tool_call_id: 't1', model });
      expect(res.status).to.equal(400);
      expect(res.body.code).to.equal('validation_failed');
      expect(res.body.data.issues[0].path).to.deep.equal(['model']);
    }
    expect(await ctx.db('credit_ledger_entries').where({ organization_id: org, kind: 'capture' }).count('* as n').first()).to.deep.equal({ n: 0 });
    expect((await run(owner, org, 'capture', { run_id: 'r1', amount: 1, tool_call_id: 't1', model: 'm'.repeat(100) })).status).to.equal(200);
  });
});
