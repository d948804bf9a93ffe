import { expect } from 'chai';
import { newUser } from '../support/factories.ts';
import { useServer } from '../support/suite.ts';

/** GET /models/public: both catalogs with their kinds, providers and prices, from the tables quotes read. */
describe('GET /models/public', () => {
  const ctx = useServer();

  it('lists every chat and generation model usable here with its prices (no provider configured: the sandbox’s); 401 without a token', async () => {
    const res = await ctx.server.request('get', '/models/public', { token: newUser().token });
    expect(res.status).to.equal(200);
    const byId = new Map(res.body.models.map((m: { id: string }) => [m.id, m]));
    expect(byId.get('sandbox-chat')).to.deep.equal({
      id: 'sandbox-chat',
      kind: 'chat',
      provider: 'sandbox',
      name: 'Sandbox chat',
      description: 'Offline, deterministic answers streamed word by word; says it is a sandbox answer.',
      enabled_by_default: true,
      prices: { input_credits_per_1k_tokens: 1, output_credits_per_1k_tokens: 2 },
    });
    expect(byId.get('sandbox-image')).to.deep.include({ kind: 'image', provider: 'sandbox', prices: { unit: 'image', credits_per_unit: 4, max_units: 1 } });
    // A model whose provider is not configured is not listed (it would be refused).
    expect(byId.has('video-prediction')).to.equal(false);
    expect(byId.has('gpt-4o-mini')).to.equal(false);
    // The same rows the prices come from: a catalog change shows at once.
    const chat = await ctx.db('chat_models').where({ provider: 'sandbox' }).count('* as n').first();
    const generation = await ctx.db('generation_models').where({ provider: 'sandbox' }).count('* as n').first();
    expect(res.body.models).to.have.length(Number(chat!.n) + Number(generation!.n));
    expect(new Set(res.body.models.map((m: { kind: string }) => m.kind))).to.deep.equal(new Set(['chat', 'image', 'audio', 'video', 'text']));
    expect((await ctx.server.request('get', '/models/public')).status).to.equal(401);
  });
});
