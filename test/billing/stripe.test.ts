import type http from 'node:http';
import { expect } from 'chai';
import Stripe from 'stripe';
import { createOrganization } from '../support/organizations.ts';
import { newUser, type TestUser } from '../support/server.ts';
import { useServer } from '../support/suite.ts';
import { startUpstream, type FakeUpstream } from '../support/upstream.ts';

const WEBHOOK_SECRET = 'whsec_test_secret_for_the_fake_stripe';

interface Seen {
  method: string;
  path: string;
  form: URLSearchParams;
  idempotencyKey: string | undefined;
  authorization: string | undefined;
}

/** A fake Stripe API on loopback: just the endpoints the adapter calls, answering like Stripe does. */
async function startFakeStripe(seen: Seen[]): Promise<FakeUpstream> {
  const periodStart = Math.floor(Date.now() / 1000) - 86_400;
  const periodEnd = periodStart + 30 * 86_400;
  let price = 'price_pro';
  const subscription = () => ({
    id: 'sub_test_1',
    object: 'subscription',
    status: 'active',
    customer: 'cus_test_1',
    items: {
      object: 'list',
      data: [
        {
          id: 'si_test_1',
          object: 'subscription_item',
          price: { id: price, object: 'price', lookup_key: price === 'price_pro' ? 'workspace_pro_monthly' : 'workspace_team_monthly' },
          current_period_start: periodStart,
          current_period_end: periodEnd,
        },
      ],
    },
  });
  const reply = (handler: (seen: Seen) => unknown) => (req: http.IncomingMessage, res: http.ServerResponse) => {
    let body = '';
    req.on('data', (chunk) => (body += chunk));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://fake');
      const entry: Seen = {
        method: req.method ?? '',
        path: url.pathname,
        form: new URLSearchParams(req.method === 'GET' ? url.search : body),
        idempotencyKey: req.headers['idempotency-key'] as string | undefined,
        authorization: req.headers.authorization,
      };
      seen.push(entry);
      res.writeHead(200, { 'content-type': 'application/json', 'request-id': 'req_fake' });
      res.end(JSON.stringify(handler(entry)));
    });
  };
  return startUpstream({
    '/v1/customers': reply((r) => ({ id: 'cus_test_1', object: 'customer', name: r.form.get('name'), email: r.form.get('email') })),
    '/v1/customers/cus_test_1': reply(() => ({ id: 'cus_test_1', object: 'customer' })),
    '/v1/prices': reply((r) => {
      const key = r.form.get('lookup_keys[0]');
      return {
        object: 'list',
        has_more: false,
        url: '/v1/prices',
        data: [{ id: key === 'workspace_pro_monthly' ? 'price_pro' : 'price_team', object: 'price', lookup_key: key }],
      };
    }),
    '/v1/invoices/create_preview': reply(() => ({ object: 'invoice', amount_due: 1234, currency: 'usd' })),
    '/v1/subscriptions': reply(() => subscription()),
    '/v1/subscriptions/sub_test_1': reply((r) => {
      if (r.method === 'POST' && r.form.get('items[0][price]')) price = r.form.get('items[0][price]')!;
      return subscription();
    }),
    '/v1/billing_portal/sessions': reply(() => ({
      id: 'bps_1',
      object: 'billing_portal.session',
      url: 'https://billing.stripe.test/session/bps_1',
      created: Math.floor(Date.now() / 1000),
    })),
  });
}

function signed(payload: object, secret = WEBHOOK_SECRET) {
  const body = JSON.stringify(payload);
  return { body, signature: Stripe.webhooks.generateTestHeaderString({ payload: body, secret }) };
}

describe('billing with the Stripe adapter (fake Stripe on loopback)', () => {
  let fake: FakeUpstream;
  let owner: TestUser;
  let org: string;
  const seen: Seen[] = [];

  before(async () => {
    fake = await startFakeStripe(seen);
  });
  const ctx = useServer(() => ({ STRIPE_SECRET_KEY: 'sk_test_fake', STRIPE_WEBHOOK_SECRET: WEBHOOK_SECRET, STRIPE_API_BASE: fake.url }));
  // biome-ignore lint/suspicious/noDuplicateTestHooks: hooks run in order — the fake before useServer's, the organization after it.
  before(async () => {
    owner = newUser();
    org = await createOrganization(ctx.server, owner);
  });
  after(async () => {
    await fake.close();
  });

  const postWebhook = (body: string, signature?: string) =>
    ctx.server.request('post', '/billing/webhooks/stripe', { rawBody: body, headers: signature ? { 'stripe-signature': signature } : {} });

  it('grants no sandbox starter credits: with Stripe, credits come from purchases and plans', async () => {
    expect(await ctx.db('credit_grants').where({ organization_id: org })).to.deep.equal([]);
    const credits = await ctx.server.request('get', `/organizations/${org}/credits`, { token: owner.token });
    expect(credits.status).to.equal(200);
    expect(credits.body).to.include({ balance: 0, held: 0, available: 0 });
  });

  it('creates and updates the Stripe customer', async () => {
    const res = await ctx.server.request('post', `/organizations/${org}/billing/customer`, {
      token: owner.token,
      body: { name: 'Acme', email: 'billing@acme.test', tax_id: 'DE1' },
    });
    expect(res.status).to.equal(201);
    expect(res.body.customer).to.include({ provider: 'stripe', provider_customer_id: 'cus_test_1' });
    const create = seen.find((r) => r.path === '/v1/customers')!;
    expect(create.method).to.equal('POST');
    expect(create.authorization).to.equal('Bearer sk_test_fake');
    expect(create.form.get('name')).to.equal('Acme');
    expect(create.form.get('email')).to.equal('billing@acme.test');
    expect(create.form.get('metadata[organization_id]')).to.equal(org);
    expect(create.idempotencyKey).to.equal(`workspace-customer-${org}`);

    const patched = await ctx.server.request('patch', `/organizations/${org}/billing/customer`, { token: owner.token, body: { email: 'ap@acme.test' } });
    expect(patched.status).to.equal(200);
    const update = seen.find((r) => r.path === '/v1/customers/cus_test_1')!;
    expect(update.form.get('email')).to.equal('ap@acme.test');
    expect(update.form.get('name')).to.equal('Acme');
  });

  it('previews through invoices.createPreview and subscribes, then upgrades the subscription item', async () => {
    const preview = await ctx.server.request('get', `/organizations/${org}/subscription/preview`, { token: owner.token, query: { plan: 'pro' } });
    expect(preview.status).to.equal(200);
    expect(preview.body.preview).to.include({ amount_due: 12.34, currency: 'usd', sandbox: false, timing: 'now' });

    const pro = await ctx.server.request('patch', `/organizations/${org}/subscription`, { token: owner.token, body: { plan: 'pro' } });
    expect(pro.status).to.equal(200);
    expect(pro.body.subscription).to.include({ provider: 'stripe' });
    expect(pro.body.subscription.plan.key).to.equal('pro');
    const created = seen.find((r) => r.path === '/v1/subscriptions')!;
    expect(created.form.get('customer')).to.equal('cus_test_1');
    expect(created.form.get('items[0][price]')).to.equal('price_pro');
    expect((await ctx.db('billing_subscriptions').where({ organization_id: org }).first()).provider_subscription_id).to.equal('sub_test_1');

    const team = await ctx.server.request('patch', `/organizations/${org}/subscription`, { token: owner.token, body: { plan: 'team' } });
    expect(team.status).to.equal(200);
    expect(team.body.subscription.plan.key).to.equal('team');
    const update = seen.filter((r) => r.path === '/v1/subscriptions/sub_test_1' && r.method === 'POST').at(-1)!;
    expect(update.form.get('items[0][id]')).to.equal('si_test_1');
    expect(update.form.get('items[0][price]')).to.equal('price_team');
    expect(update.form.get('proration_behavior')).to.equal('always_invoice');
  });

  it('opens a Stripe billing portal session', async () => {
    const res = await ctx.server.request('post', `/organizations/${org}/billing/portal-sessions`, {
      token: owner.token,
      body: { return_url: 'https://app.example.test/billing' },
    });
    expect(res.status).to.equal(201);
    expect(res.body.url).to.equal('https://billing.stripe.test/session/bps_1');
    expect(new Date(res.body.expires_at).getTime()).to.be.above(Date.now());
    const call = seen.find((r) => r.path === '/v1/billing_portal/sessions')!;
    expect(call.form.get('customer')).to.equal('cus_test_1');
    expect(call.form.get('return_url')).to.equal('https://app.example.test/billing');
  });

  describe('POST /billing/webhooks/stripe', () => {
    const purchase = (id: string) => ({
      id,
      object: 'event',
      type: 'checkout.session.completed',
      created: Math.floor(Date.now() / 1000),
      data: {
        object: {
          id: `cs_${id}`,
          object: 'checkout.session',
          mode: 'payment',
          payment_status: 'paid',
          amount_total: 999,
          currency: 'usd',
          customer: 'cus_test_1',
          metadata: { organization_id: org, credits: '500' },
        },
      },
    });
    const purchases = () => ctx.db('credit_grants').where({ organization_id: org, source: 'purchase' });

    it('applies a signed purchase once: a replay changes nothing', async () => {
      const { body, signature } = signed(purchase('evt_purchase_1'));
      const first = await postWebhook(body, signature);
      expect(first.status).to.equal(200);
      expect(first.body).to.deep.equal({ received: true, outcome: 'applied' });
      const replay = await postWebhook(body, signature);
      expect(replay.status).to.equal(200);
      expect(replay.body).to.deep.equal({ received: true, outcome: 'duplicate' });

      const grants = await purchases();
      expect(grants.map((g) => g.amount)).to.deep.equal([500]);
      const events = await ctx.db('billing_events').where({ organization_id: org, type: 'credits.purchased' });
      expect(events).to.have.length(1);
      expect(events[0]).to.include({ title: '500 credits purchased', currency: 'usd', provider_event_id: 'evt_purchase_1' });
      expect(Number(events[0].amount)).to.equal(9.99);
      const listed = await ctx.server.request('get', `/organizations/${org}/billing/events`, { token: owner.token });
      expect(listed.body.events[0]).to.include({ type: 'credits.purchased', amount: 9.99, currency: 'usd' });
    });

    it('applies concurrent deliveries of one event exactly once', async () => {
      const { body, signature } = signed(purchase('evt_purchase_2'));
      const results = await Promise.all(Array.from({ length: 5 }, () => postWebhook(body, signature)));
      expect(results.map((r) => r.status)).to.deep.equal([200, 200, 200, 200, 200]);
      expect(results.map((r) => r.body.outcome).sort()).to.deep.equal(['applied', 'duplicate', 'duplicate', 'duplicate', 'duplicate']);
      expect((await purchases()).map((g) => g.amount)).to.deep.equal([500, 500]);
    });

    it('rejects a bad or missing signature with 400 and applies nothing', async () => {
      const forged = signed(purchase('evt_forged'), 'whsec_someone_else');
      const bad = await postWebhook(forged.body, forged.signature);
      expect(bad.status).to.equal(400);
      expect(bad.body.code).to.equal('validation_failed');
      expect(bad.body.message).to.match(/^Stripe-Signature/);
      const { body, signature } = signed(purchase('evt_tampered'));
      const tampered = await postWebhook(body.replace('"500"', '"50000"'), signature);
      expect(tampered.status).to.equal(400);
      expect((await postWebhook(body)).status).to.equal(400);
      expect(await ctx.db('billing_webhook_receipts').whereIn('event_id', ['evt_forged', 'evt_tampered'])).to.have.length(0);
      expect((await purchases()).length).to.equal(2);
    });

    it('syncs the subscription from customer.subscription.updated (found by customer id)', async () => {
      const now = Math.floor(Date.now() / 1000);
      const { body, signature } = signed({
        id: 'evt_sub_1',
        object: 'event',
        type: 'customer.subscription.updated',
        created: now,
        data: {
          object: {
            id: 'sub_test_1',
            object: 'subscription',
            status: 'past_due',
            customer: 'cus_test_1',
            metadata: {},
            items: {
              data: [
                {
                  id: 'si_test_1',
                  price: { id: 'price_pro', lookup_key: 'workspace_pro_monthly' },
                  current_period_start: now,
                  current_period_end: now + 30 * 86_400,
                },
              ],
            },
          },
        },
      });
      const res = await postWebhook(body, signature);
      expect(res.body.outcome).to.equal('applied');
      const sub = await ctx.server.request('get', `/organizations/${org}/subscription`, { token: owner.token });
      expect(sub.body.subscription).to.include({ status: 'past_due' });
      expect(sub.body.subscription.plan.key).to.equal('pro');
      expect(sub.body.subscription.current_period_start).to.equal(new Date(now * 1000).toISOString());
    });
  });
});
