import { expect } from 'chai';
import { addMember, createOrganization } from '../support/organizations.ts';
import { newUser, type ApiResponse, type TestUser } from '../support/server.ts';
import { useServer } from '../support/suite.ts';

const contact = {
  name: 'Acme GmbH',
  email: 'billing@acme.test',
  address: { line1: 'Main St 1', city: 'Berlin', postal_code: '10115', country: 'DE' },
  tax_id: 'DE123456789',
};

function expectError(res: ApiResponse, status: number, code: string) {
  expect(res.status, JSON.stringify(res.body)).to.equal(status);
  expect(res.body.code).to.equal(code);
  expect(res.body.data.issues).to.be.an('array');
}

describe('billing (sandbox provider)', () => {
  const ctx = useServer();
  let owner: TestUser;
  let admin: TestUser;
  let member: TestUser;
  let stranger: TestUser;
  let org: string;

  beforeEach(async () => {
    owner = newUser();
    admin = newUser();
    member = newUser();
    stranger = newUser();
    org = await createOrganization(ctx.server, owner);
    await addMember(ctx.db, org, admin, 'admin');
    await addMember(ctx.db, org, member, 'member');
  });

  const grantsOf = (organizationId: string, source: string) => ctx.db('credit_grants').where({ organization_id: organizationId, source }).orderBy('seq');

  describe('GET /organizations/{id}/subscription', () => {
    it('starts every organization on the free plan with a monthly period', async () => {
      const res = await ctx.server.request('get', `/organizations/${org}/subscription`, { token: admin.token });
      expect(res.status).to.equal(200);
      const sub = res.body.subscription;
      expect(Object.keys(sub).sort()).to.deep.equal([
        'created_at',
        'current_period_end',
        'current_period_start',
        'organization_id',
        'plan',
        'provider',
        'scheduled_change',
        'status',
        'updated_at',
      ]);
      expect(sub).to.include({ organization_id: org, status: 'active', provider: 'sandbox', scheduled_change: null });
      expect(sub.plan).to.deep.equal({ key: 'free', name: 'Free', amount: 0, currency: 'usd', interval: 'month', monthly_credits: 0 });
      expect(new Date(sub.current_period_start).getTime()).to.be.at.most(Date.now());
      expect(new Date(sub.current_period_end).getTime()).to.be.above(Date.now());
    });

    it('is 404 for non-members and 403 for members without billing.view', async () => {
      expectError(await ctx.server.request('get', `/organizations/${org}/subscription`, { token: stranger.token }), 404, 'not_found');
      expectError(await ctx.server.request('get', `/organizations/${org}/subscription`, { token: member.token }), 403, 'forbidden');
      expectError(await ctx.server.request('get', `/organizations/${org}/subscription`), 401, 'unauthorized');
    });
  });

  describe('billing customer', () => {
    it('creates the customer once (201, then 409) and patches it', async () => {
      const created = await ctx.server.request('post', `/organizations/${org}/billing/customer`, { token: owner.token, body: contact });
      expect(created.status).to.equal(201);
      const customer = created.body.customer;
      expect(customer).to.include({ organization_id: org, provider: 'sandbox', name: 'Acme GmbH', email: 'billing@acme.test', tax_id: 'DE123456789' });
      expect(customer.provider_customer_id).to.match(/^sbx_cus_/);
      expect(customer.address).to.deep.equal(contact.address);
      expectError(await ctx.server.request('post', `/organizations/${org}/billing/customer`, { token: owner.token, body: contact }), 409, 'conflict');

      const patched = await ctx.server.request('patch', `/organizations/${org}/billing/customer`, {
        token: owner.token,
        body: { email: 'ap@acme.test', tax_id: null },
      });
      expect(patched.status).to.equal(200);
      expect(patched.body.customer).to.include({ email: 'ap@acme.test', name: 'Acme GmbH', tax_id: null });
      expect(patched.body.customer.address).to.deep.equal(contact.address);
      const types = await ctx.db('billing_events').where({ organization_id: org }).orderBy('created_at').pluck('type');
      expect(types).to.deep.equal(['customer.created', 'customer.updated']);
      const activity = await ctx.db('activity_events').where({ organization_id: org }).whereLike('action', 'billing_customer.%').pluck('action');
      expect(activity.sort()).to.deep.equal(['billing_customer.created', 'billing_customer.updated']);
    });

    it('validates the body and the permission', async () => {
      const bad = await ctx.server.request('post', `/organizations/${org}/billing/customer`, { token: owner.token, body: { ...contact, email: 'nope' } });
      expectError(bad, 400, 'validation_failed');
      expect(bad.body.message).to.match(/^email/);
      expectError(
        await ctx.server.request('post', `/organizations/${org}/billing/customer`, { token: owner.token, body: { ...contact, extra: 1 } }),
        400,
        'validation_failed',
      );
      expectError(
        await ctx.server.request('post', `/organizations/${org}/billing/customer`, {
          token: owner.token,
          body: { ...contact, address: { ...contact.address, country: 'Germany' } },
        }),
        400,
        'validation_failed',
      );
      // Admins may view billing but not manage money.
      expectError(await ctx.server.request('post', `/organizations/${org}/billing/customer`, { token: admin.token, body: contact }), 403, 'forbidden');
      expectError(await ctx.server.request('post', `/organizations/${org}/billing/customer`, { token: stranger.token, body: contact }), 404, 'not_found');
      expectError(await ctx.server.request('patch', `/organizations/${org}/billing/customer`, { token: owner.token, body: { name: 'X' } }), 404, 'not_found');
    });
  });

  describe('plan changes', () => {
    it('needs a billing customer for a paid plan (409)', async () => {
      const res = await ctx.server.request('patch', `/organizations/${org}/subscription`, { token: owner.token, body: { plan: 'pro' } });
      expectError(res, 409, 'conflict');
      expect(res.body.data.issues[0].path).to.deep.equal(['plan']);
    });

    it('previews and applies an upgrade now: prorated charge, prorated credits, billing event', async () => {
      await ctx.server.request('post', `/organizations/${org}/billing/customer`, { token: owner.token, body: contact });
      const preview = await ctx.server.request('get', `/organizations/${org}/subscription/preview`, { token: admin.token, query: { plan: 'pro' } });
      expect(preview.status).to.equal(200);
      const p = preview.body.preview;
      expect(p).to.include({ timing: 'now', currency: 'usd', sandbox: true });
      expect(p.from_plan.key).to.equal('free');
      expect(p.to_plan.key).to.equal('pro');
      expect(p.amount_due).to.be.above(0).and.at.most(20);
      expect(p.credit_change).to.be.above(0).and.at.most(5000);
      expect(await grantsOf(org, 'plan_cycle')).to.have.length(0); // a preview changes nothing

      const changed = await ctx.server.request('patch', `/organizations/${org}/subscription`, { token: owner.token, body: { plan: 'pro' } });
      expect(changed.status).to.equal(200);
      expect(changed.body.subscription.plan.key).to.equal('pro');
      expect(changed.body.subscription.scheduled_change).to.equal(null);
      const grants = await grantsOf(org, 'plan_cycle');
      expect(grants).to.have.length(1);
      expect(Math.abs(grants[0].amount - p.credit_change)).to.be.at.most(1);
      expect(new Date(grants[0].expires_at).toISOString()).to.equal(changed.body.subscription.current_period_end);
      const event = await ctx.db('billing_events').where({ organization_id: org, type: 'subscription.plan_changed' }).first();
      expect(event.title).to.equal('Plan changed to Pro');
      expect(Number(event.amount)).to.be.above(0);
      expect(event.currency).to.equal('usd');
      expect(await ctx.db('activity_events').where({ organization_id: org, action: 'subscription.plan_changed' }).count('* as n').first()).to.deep.equal({
        n: 1,
      });
    });

    it('schedules a downgrade for the period end; DELETE scheduled-change cancels it once', async () => {
      await ctx.server.request('post', `/organizations/${org}/billing/customer`, { token: owner.token, body: contact });
      await ctx.server.request('patch', `/organizations/${org}/subscription`, { token: owner.token, body: { plan: 'team' } });
      const preview = await ctx.server.request('get', `/organizations/${org}/subscription/preview`, { token: owner.token, query: { plan: 'pro' } });
      expect(preview.body.preview).to.include({ timing: 'period_end', amount_due: 0, credit_change: 0 });

      const res = await ctx.server.request('patch', `/organizations/${org}/subscription`, { token: owner.token, body: { plan: 'pro' } });
      expect(res.status).to.equal(200);
      const sub = res.body.subscription;
      expect(sub.plan.key).to.equal('team');
      expect(sub.scheduled_change.plan.key).to.equal('pro');
      expect(sub.scheduled_change.effective_at).to.equal(sub.current_period_end);
      expect(preview.body.preview.effective_at).to.equal(sub.current_period_end);

      const canceled = await ctx.server.request('delete', `/organizations/${org}/subscription/scheduled-change`, { token: owner.token });
      expect(canceled.status).to.equal(204);
      const after = await ctx.server.request('get', `/organizations/${org}/subscription`, { token: owner.token });
      expect(after.body.subscription.scheduled_change).to.equal(null);
      expect(after.body.subscription.plan.key).to.equal('team');
      expectError(await ctx.server.request('delete', `/organizations/${org}/subscription/scheduled-change`, { token: owner.token }), 404, 'not_found');
    });

    it('rejects the current plan (409), unknown plans (400), unknown fields (400), missing permission (403), strangers (404)', async () => {
      expectError(await ctx.server.request('patch', `/organizations/${org}/subscription`, { token: owner.token, body: { plan: 'free' } }), 409, 'conflict');
      expectError(
        await ctx.server.request('patch', `/organizations/${org}/subscription`, { token: owner.token, body: { plan: 'gold' } }),
        400,
        'validation_failed',
      );
      expectError(
        await ctx.server.request('patch', `/organizations/${org}/subscription`, { token: owner.token, body: { plan: 'pro', when: 'now' } }),
        400,
        'validation_failed',
      );
      expectError(await ctx.server.request('patch', `/organizations/${org}/subscription`, { token: admin.token, body: { plan: 'pro' } }), 403, 'forbidden');
      expectError(await ctx.server.request('patch', `/organizations/${org}/subscription`, { token: stranger.token, body: { plan: 'pro' } }), 404, 'not_found');
      expectError(await ctx.server.request('get', `/organizations/${org}/subscription/preview`, { token: owner.token }), 400, 'validation_failed');
      expectError(
        await ctx.server.request('get', `/organizations/${org}/subscription/preview`, { token: member.token, query: { plan: 'pro' } }),
        403,
        'forbidden',
      );
      expectError(await ctx.server.request('delete', `/organizations/${org}/subscription/scheduled-change`, { token: admin.token }), 403, 'forbidden');
    });
  });

  describe('portal sessions and summary', () => {
    it('opens a sandbox portal session for an organization with a customer', async () => {
      expectError(await ctx.server.request('post', `/organizations/${org}/billing/portal-sessions`, { token: owner.token, body: {} }), 404, 'not_found');
      const customer = (await ctx.server.request('post', `/organizations/${org}/billing/customer`, { token: owner.token, body: contact })).body.customer;
      const res = await ctx.server.request('post', `/organizations/${org}/billing/portal-sessions`, { token: owner.token, body: {} });
      expect(res.status).to.equal(201);
      expect(Object.keys(res.body).sort()).to.deep.equal(['expires_at', 'url']);
      const url = new URL(res.body.url);
      expect(url.pathname).to.equal('/sandbox/billing-portal');
      expect(url.searchParams.get('customer')).to.equal(customer.provider_customer_id);
      expect(new Date(res.body.expires_at).getTime()).to.be.above(Date.now());
      expectError(await ctx.server.request('post', `/organizations/${org}/billing/portal-sessions`, { token: admin.token, body: {} }), 403, 'forbidden');
      expectError(
        await ctx.server.request('post', `/organizations/${org}/billing/portal-sessions`, { token: owner.token, body: { return_url: 'not a url' } }),
        400,
        'validation_failed',
      );
    });

    it('summarises provider, customer, subscription and plan', async () => {
      const before = await ctx.server.request('get', `/organizations/${org}/billing`, { token: admin.token });
      expect(before.status).to.equal(200);
      expect(Object.keys(before.body).sort()).to.deep.equal(['customer', 'plan', 'provider', 'subscription']);
      expect(before.body).to.include({ provider: 'sandbox', customer: null });
      expect(before.body.plan.key).to.equal('free');
      await ctx.server.request('post', `/organizations/${org}/billing/customer`, { token: owner.token, body: contact });
      const after = await ctx.server.request('get', `/organizations/${org}/billing`, { token: admin.token });
      expect(after.body.customer.email).to.equal(contact.email);
      expectError(await ctx.server.request('get', `/organizations/${org}/billing`, { token: member.token }), 403, 'forbidden');
      expectError(await ctx.server.request('get', `/organizations/${org}/billing`, { token: stranger.token }), 404, 'not_found');
    });
  });

  describe('GET /organizations/{id}/billing/events', () => {
    async function seed(count: number, daysAgo: (i: number) => number) {
      const rows = Array.from({ length: count }, (_, i) => ({
        organization_id: org,
        type: 'invoice.paid',
        title: `Invoice ${i}`,
        description: `Invoice ${i} was paid.`,
        amount: i % 2 ? '12.50' : null,
        currency: i % 2 ? 'usd' : null,
        created_at: new Date(Date.now() - daysAgo(i) * 86_400_000 - i * 1000),
      }));
      await ctx.db('billing_events').insert(rows);
    }

    it('returns exactly the spec shape, newest first, amount/currency only when money moved', async () => {
      await seed(3, () => 1);
      const res = await ctx.server.request('get', `/organizations/${org}/billing/events`, { token: admin.token });
      expect(res.status).to.equal(200);
      expect(Object.keys(res.body)).to.deep.equal(['events']);
      const events = res.body.events;
      expect(events.map((e: any) => e.title)).to.deep.equal(['Invoice 0', 'Invoice 1', 'Invoice 2']);
      expect(Object.keys(events[0]).sort()).to.deep.equal(['created_at', 'description', 'id', 'title', 'type']);
      expect(events[1]).to.include({ type: 'invoice.paid', amount: 12.5, currency: 'usd', description: 'Invoice 1 was paid.' });
      expect(Object.keys(events[1]).sort()).to.deep.equal(['amount', 'created_at', 'currency', 'description', 'id', 'title', 'type']);
      expect(events[0].created_at).to.match(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    });

    it('honours days (default 30) and limit (default 50)', async () => {
      await seed(60, (i) => (i < 55 ? 2 : 40)); // 55 within 30 days, 5 older
      const defaults = await ctx.server.request('get', `/organizations/${org}/billing/events`, { token: owner.token });
      expect(defaults.body.events).to.have.length(50);
      const all30 = await ctx.server.request('get', `/organizations/${org}/billing/events`, { token: owner.token, query: { limit: 100 } });
      expect(all30.body.events).to.have.length(55);
      const all = await ctx.server.request('get', `/organizations/${org}/billing/events`, { token: owner.token, query: { limit: 100, days: 365 } });
      expect(all.body.events).to.have.length(60);
      const one = await ctx.server.request('get', `/organizations/${org}/billing/events`, { token: owner.token, query: { days: 1 } });
      expect(one.body.events).to.have.length(0);
      const three = await ctx.server.request('get', `/organizations/${org}/billing/events`, { token: owner.token, query: { limit: 3 } });
      expect(three.body.events.map((e: any) => e.title)).to.deep.equal(['Invoice 0', 'Invoice 1', 'Invoice 2']);
    });

    it('rejects out-of-range days/limit (400) and checks access', async () => {
      for (const query of [{ days: 0 }, { days: 366 }, { limit: 0 }, { limit: 101 }, { days: 'x' }]) {
        const res = await ctx.server.request('get', `/organizations/${org}/billing/events`, { token: owner.token, query });
        expectError(res, 400, 'validation_failed');
        expect(res.body.message).to.match(/^query\.(days|limit)/);
      }
      expectError(await ctx.server.request('get', `/organizations/${org}/billing/events`, { token: member.token }), 403, 'forbidden');
      expectError(await ctx.server.request('get', `/organizations/${org}/billing/events`, { token: stranger.token }), 404, 'not_found');
    });
  });

  it('the Stripe webhook endpoint does not exist under sandbox billing (404)', async () => {
    expectError(await ctx.server.request('post', '/billing/webhooks/stripe', { body: { id: 'evt_1', type: 'invoice.paid' } }), 404, 'not_found');
  });
});
