import type { IncomingMessage, ServerResponse } from 'node:http';
import { expect } from 'chai';
import { grantCredits } from '../../src/credits/ledger.ts';
import { reconcileCredits } from '../../src/credits/reconcile.ts';
import { encodePng } from '../../src/providers/generation/png.ts';
import { eventually } from '../jobs/support.ts';
import { createOrganization, newUser, type TestUser } from '../support/factories.ts';
import { type Stack, startStack } from '../support/stack.ts';
import { type FakeUpstream, json, readJson, startUpstream } from '../support/upstream.ts';

const png = encodePng(3, 2, new Uint8Array(18).fill(200));

/**
 * Generations are served by their model's own provider: with GENERATION_OPENAI_URL set, a
 * `sandbox-image` generation is the sandbox's (the service hears nothing of it) and a
 * `gpt-image-1` one the service's; each billed at its catalog price (4 and 40 credits an image).
 */
describe('generations: each model served by its own provider (GENERATION_OPENAI_URL set)', function () {
  this.timeout(60_000);
  let upstream: FakeUpstream;
  let stack: Stack;
  let alice: TestUser;
  let org: string;
  /** Every request body the fake images service received, in order. */
  const received: any[] = [];

  before(async () => {
    upstream = await startUpstream({
      '/v1/images/generations': (req: IncomingMessage, res: ServerResponse) =>
        void readJson(req).then((body) => {
          received.push(body);
          json(res, 200, { created: 1, data: [{ b64_json: png.toString('base64') }] });
        }),
    });
    stack = await startStack({
      GENERATION_OPENAI_URL: upstream.url,
      GENERATION_OPENAI_KEY: 'sk-test-routing',
      WORKER_POLL_INTERVAL_SECONDS: '0.5',
      STARTER_CREDITS: '0',
    });
    alice = newUser();
    org = await createOrganization(stack.server, alice);
    await stack.db.transaction((trx) => grantCredits(trx, { organizationId: org, source: 'purchase', amount: 100, description: 'Test credits' }));
  });
  after(async () => {
    await stack?.stop();
    await upstream?.close();
  });

  async function generate(model: string) {
    const created = await stack.server.request('post', '/generations', {
      token: alice.token,
      body: { organization_id: org, kind: 'image', prompt: 'A red kite over green hills', model },
    });
    expect(created.status, JSON.stringify(created.body)).to.equal(201);
    const id = created.body.generation.id as string;
    return eventually(`generation ${id} ended`, async () => {
      const res = await stack.server.request('get', `/generations/${id}`, { token: alice.token });
      return ['succeeded', 'failed', 'canceled'].includes(res.body.generation?.status) ? res.body.generation : null;
    });
  }

  it('sandbox-image is drawn by the sandbox: the images service receives nothing; billed 4 credits', async () => {
    const before = upstream.requests.length;
    const done = await generate('sandbox-image');
    expect(done).to.include({ status: 'succeeded', model: 'sandbox-image', sandbox: true, credits_charged: 4, error: null });
    expect(upstream.requests.slice(before)).to.deep.equal([]);
    expect(await reconcileCredits(stack.db, org)).to.deep.equal([]);
  });

  it('gpt-image-1 is made by the images service: exactly one request, for that model; billed 40 credits', async () => {
    const before = upstream.requests.length;
    const done = await generate('gpt-image-1');
    expect(done).to.include({ status: 'succeeded', model: 'gpt-image-1', sandbox: false, credits_charged: 40, error: null });
    expect(upstream.requests.slice(before)).to.deep.equal(['/v1/images/generations']);
    const [sent, ...more] = received.slice(before);
    expect(more).to.deep.equal([]);
    expect(sent.model).to.equal('gpt-image-1');
    const file = await fetch(`${stack.server.url}/assets/${done.asset_ids[0]}/file`, { headers: { authorization: `Bearer ${alice.token}` } });
    expect(Buffer.from(await file.arrayBuffer()).equals(png)).to.equal(true);
    expect(await reconcileCredits(stack.db, org)).to.deep.equal([]);
  });
});
