import { expect } from 'chai';
import { SandboxChatProvider, sandboxAnswer } from '../../src/providers/chat/sandbox.ts';
import type { ChatChunk } from '../../src/providers/chat/types.ts';
import { addMember, createOrganization, newUser, type TestUser } from '../support/factories.ts';
import type { ApiResponse } from '../support/server.ts';
import { useServer } from '../support/suite.ts';

const show = (res: ApiResponse) => `${res.status} ${JSON.stringify(res.body)}`;
const catalogKeys = [
  'id',
  'provider',
  'name',
  'description',
  'context_window',
  'input_credits_per_1k_tokens',
  'output_credits_per_1k_tokens',
  'enabled_by_default',
  'created_at',
  'updated_at',
].sort();
const copyKeys = [
  'chat_model_id',
  'organization_id',
  'customized',
  'enabled',
  'display_name',
  'default_parameters',
  'input_credits_per_1k_tokens',
  'output_credits_per_1k_tokens',
  'effective',
  'updated_by_id',
  'updated_at',
].sort();

describe('chat models: catalog and organization copies', () => {
  // A chat service configured (never called here): its models are available beside the sandbox's.
  const ctx = useServer({ CHAT_API_URL: 'http://127.0.0.1:9/v1' });
  let org: string;
  let owner: TestUser;
  let admin: TestUser;
  let member: TestUser;
  let outsider: TestUser;
  const get = (path: string, user: TestUser, query?: Record<string, string>) => ctx.server.request('get', path, { token: user.token, ...(query && { query }) });
  const put = (model: string, user: TestUser, body: Record<string, unknown>) =>
    ctx.server.request('put', `/chat-models/${model}/copy`, { token: user.token, body: { organization_id: org, ...body } });

  before(async () => {
    [owner, admin, member, outsider] = [newUser(), newUser(), newUser(), newUser()];
    org = await createOrganization(ctx.server, owner);
    await createOrganization(ctx.server, outsider);
    await addMember(ctx.db, org, admin, 'admin');
    await addMember(ctx.db, org, member, 'member');
  });

  it('lists the seeded catalog by id, keyset paged, without and with an organization', async () => {
    const all = await get('/chat-models', member);
    expect(all.status, show(all)).to.equal(200);
    expect(Object.keys(all.body).sort()).to.deep.equal(['items', 'next_cursor']);
    expect(all.body.items.map((m: { id: string }) => m.id)).to.deep.equal(['gpt-4o', 'gpt-4o-mini', 'sandbox-chat']);
    expect(all.body.next_cursor).to.equal(null);
    const sandbox = all.body.items.find((m: { id: string }) => m.id === 'sandbox-chat');
    expect(Object.keys(sandbox).sort()).to.deep.equal([...catalogKeys, 'enabled'].sort());
    expect(sandbox).to.include({ provider: 'sandbox', context_window: 8192, input_credits_per_1k_tokens: 1, output_credits_per_1k_tokens: 2, enabled: null });

    const first = await get('/chat-models', member, { limit: '2' });
    expect(first.body.items).to.have.length(2);
    const second = await get('/chat-models', member, { limit: '2', cursor: first.body.next_cursor });
    expect(second.body.items.map((m: { id: string }) => m.id)).to.deep.equal(['sandbox-chat']);
    expect(second.body.next_cursor).to.equal(null);

    const inOrg = await get('/chat-models', member, { organization_id: org });
    expect(inOrg.body.items.map((m: { id: string; enabled: boolean }) => [m.id, m.enabled])).to.deep.equal([
      ['gpt-4o', false],
      ['gpt-4o-mini', true],
      ['sandbox-chat', true],
    ]);
    const outside = await get('/chat-models', outsider, { organization_id: org });
    expect(outside.status).to.equal(200);
    expect(outside.body).to.deep.equal({ items: [], next_cursor: null });
  });

  it('reads one catalog entry; 404 for an unknown id; 400 for an id that is not a model id', async () => {
    const one = await get('/chat-models/gpt-4o-mini', outsider);
    expect(one.status, show(one)).to.equal(200);
    expect(Object.keys(one.body)).to.deep.equal(['chat_model']);
    expect(Object.keys(one.body.chat_model).sort()).to.deep.equal(catalogKeys);
    expect(one.body.chat_model).to.include({ id: 'gpt-4o-mini', provider: 'openai-compatible', context_window: 128000 });
    const missing = await get('/chat-models/no-such-model', member);
    expect(missing.status).to.equal(404);
    expect(missing.body.code).to.equal('not_found');
    const bad = await get('/chat-models/Not%20A%20Model', member);
    expect(bad.status).to.equal(400);
  });

  it('the copy: defaults before any change; any member reads it; 404 outside the organization and for an unknown model', async () => {
    const copy = await get('/chat-models/gpt-4o/copy', member, { organization_id: org });
    expect(copy.status, show(copy)).to.equal(200);
    expect(Object.keys(copy.body)).to.deep.equal(['chat_model_copy']);
    expect(Object.keys(copy.body.chat_model_copy).sort()).to.deep.equal(copyKeys);
    expect(copy.body.chat_model_copy).to.deep.equal({
      chat_model_id: 'gpt-4o',
      organization_id: org,
      customized: false,
      enabled: false,
      display_name: null,
      default_parameters: null,
      input_credits_per_1k_tokens: null,
      output_credits_per_1k_tokens: null,
      effective: { display_name: 'GPT-4o', input_credits_per_1k_tokens: 10, output_credits_per_1k_tokens: 40 },
      updated_by_id: null,
      updated_at: null,
    });
    const outside = await get('/chat-models/gpt-4o/copy', outsider, { organization_id: org });
    const unknown = await get('/chat-models/no-such-model/copy', member, { organization_id: org });
    const unknownOutside = await get('/chat-models/no-such-model/copy', outsider, { organization_id: org });
    for (const res of [outside, unknown, unknownOutside]) {
      expect(res.status, show(res)).to.equal(404);
      expect(res.body.code).to.equal('not_found');
    }
    expect(outside.body).to.deep.equal(unknown.body);
  });

  it('permission matrix for PUT copy: owner and admin change it; a member 403; an outsider 403 (also for an unknown model or organization)', async () => {
    const byOwner = await put('sandbox-chat', owner, { enabled: true, display_name: 'Offline helper' });
    expect(byOwner.status, show(byOwner)).to.equal(200);
    expect(byOwner.body.chat_model_copy).to.include({ customized: true, enabled: true, display_name: 'Offline helper', updated_by_id: owner.id });
    const byAdmin = await put('sandbox-chat', admin, { enabled: true, display_name: 'Offline helper 2' });
    expect(byAdmin.status, show(byAdmin)).to.equal(200);
    const byMember = await put('sandbox-chat', member, { enabled: false });
    expect(byMember.status, show(byMember)).to.equal(403);
    expect(byMember.body.code).to.equal('forbidden');
    expect(byMember.body.message).to.include('chat_models.manage');
    for (const [model, organization] of [
      ['sandbox-chat', org],
      ['no-such-model', org],
      ['sandbox-chat', 'no-such-organization'],
    ] as const) {
      const res = await ctx.server.request('put', `/chat-models/${model}/copy`, {
        token: outsider.token,
        body: { organization_id: organization, enabled: false },
      });
      expect(res.status, show(res)).to.equal(403);
      expect(res.body.code).to.equal('forbidden');
    }
    const unknown = await put('no-such-model', owner, { enabled: true });
    expect(unknown.status, show(unknown)).to.equal(404);
    const after = await get('/chat-models/sandbox-chat/copy', member, { organization_id: org });
    expect(after.body.chat_model_copy.display_name).to.equal('Offline helper 2');
  });

  it('bounds: 400 naming the field for parameters and price overrides out of range; unknown fields refused', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ default_parameters: { temperature: 2.5 } }, 'default_parameters.temperature'],
      [{ default_parameters: { top_p: 1.5 } }, 'default_parameters.top_p'],
      [{ default_parameters: { max_tokens: 8193 } }, 'default_parameters.max_tokens'],
      [{ default_parameters: { seed: 1 } }, 'default_parameters'],
      [{ input_credits_per_1k_tokens: 0 }, 'input_credits_per_1k_tokens'],
      [{ input_credits_per_1k_tokens: 11 }, 'input_credits_per_1k_tokens'],
      [{ output_credits_per_1k_tokens: 1 }, 'output_credits_per_1k_tokens'],
      [{ output_credits_per_1k_tokens: 21 }, 'output_credits_per_1k_tokens'],
      [{ output_credits_per_1k_tokens: 2.5 }, 'output_credits_per_1k_tokens'],
      [{ display_name: 'two\nlines' }, 'display_name'],
      [{ extra: true }, 'extra'],
    ];
    for (const [fields, field] of cases) {
      const res = await put('sandbox-chat', owner, { enabled: true, ...fields });
      expect(res.status, `${JSON.stringify(fields)}: ${show(res)}`).to.equal(400);
      expect(res.body.code).to.equal('validation_failed');
      expect(res.body.message, JSON.stringify(fields)).to.include(field);
    }
    const edges = await put('sandbox-chat', owner, {
      enabled: true,
      default_parameters: { temperature: 2, top_p: 0, max_tokens: 8192 },
      input_credits_per_1k_tokens: 10,
      output_credits_per_1k_tokens: 2,
    });
    expect(edges.status, show(edges)).to.equal(200);
    expect(edges.body.chat_model_copy).to.deep.include({
      default_parameters: { temperature: 2, top_p: 0, max_tokens: 8192 },
      input_credits_per_1k_tokens: 10,
      output_credits_per_1k_tokens: 2,
      effective: { display_name: 'Sandbox chat', input_credits_per_1k_tokens: 10, output_credits_per_1k_tokens: 2 },
    });
  });

  it('the available list reflects the copies, records activity, and is an empty page to non-members', async () => {
    const ids = async () => (await get('/chat-models/available', member, { organization_id: org })).body.items.map((m: { id: string }) => m.id);
    expect(await put('gpt-4o', admin, { enabled: true, display_name: 'Big model', output_credits_per_1k_tokens: 60 })).to.have.property('status', 200);
    expect(await put('gpt-4o-mini', admin, { enabled: false })).to.have.property('status', 200);
    expect(await put('sandbox-chat', admin, { enabled: true, default_parameters: { temperature: 0.5 } })).to.have.property('status', 200);
    expect(await ids()).to.deep.equal(['gpt-4o', 'sandbox-chat']);

    const page = await get('/chat-models/available', member, { organization_id: org });
    expect(page.status, show(page)).to.equal(200);
    expect(page.body).to.deep.equal({
      items: [
        {
          id: 'gpt-4o',
          provider: 'openai-compatible',
          display_name: 'Big model',
          name: 'GPT-4o',
          description: page.body.items[0].description,
          context_window: 128000,
          default_parameters: null,
          input_credits_per_1k_tokens: 10,
          output_credits_per_1k_tokens: 60,
        },
        {
          id: 'sandbox-chat',
          provider: 'sandbox',
          display_name: 'Sandbox chat',
          name: 'Sandbox chat',
          description: page.body.items[1].description,
          context_window: 8192,
          default_parameters: { temperature: 0.5 },
          input_credits_per_1k_tokens: 1,
          output_credits_per_1k_tokens: 2,
        },
      ],
      next_cursor: null,
    });
    const paged = await get('/chat-models/available', member, { organization_id: org, limit: '1' });
    expect(paged.body.items.map((m: { id: string }) => m.id)).to.deep.equal(['gpt-4o']);
    const rest = await get('/chat-models/available', member, { organization_id: org, limit: '1', cursor: paged.body.next_cursor });
    expect(rest.body).to.deep.include({ next_cursor: null });
    expect(rest.body.items.map((m: { id: string }) => m.id)).to.deep.equal(['sandbox-chat']);

    for (const organization of [org, 'no-such-organization']) {
      const outside = await get('/chat-models/available', outsider, { organization_id: organization });
      expect(outside.status).to.equal(200);
      expect(outside.body).to.deep.equal({ items: [], next_cursor: null });
    }
    // The catalog with the organization agrees.
    const inOrg = await get('/chat-models', member, { organization_id: org });
    expect(inOrg.body.items.map((m: { id: string; enabled: boolean }) => [m.id, m.enabled])).to.deep.equal([
      ['gpt-4o', true],
      ['gpt-4o-mini', false],
      ['sandbox-chat', true],
    ]);

    const activity = await ctx
      .db('activity_events')
      .where({ organization_id: org, action: 'chat_model_copy.updated', subject_id: 'gpt-4o-mini' })
      .orderBy('created_at', 'desc')
      .first();
    expect(activity).to.include({ actor_id: admin.id, subject_type: 'chat_model' });
    expect(activity.data.before).to.equal(null);
    expect(activity.data.after).to.include({ enabled: false });
  });
});

describe('chat models: the sandbox provider', () => {
  const messages = [{ role: 'user' as const, content: 'How do I plan a product launch?' }];
  const collect = async (provider: SandboxChatProvider, request: Parameters<SandboxChatProvider['stream']>[0]) => {
    const chunks: ChatChunk[] = [];
    for await (const chunk of provider.stream(request)) chunks.push(chunk);
    return chunks;
  };

  it('streams the same answer token by token for the same prompt, says it is a sandbox answer, and reports usage last', async () => {
    const provider = new SandboxChatProvider();
    const one = await collect(provider, { model: 'sandbox-chat', provider: 'sandbox', messages });
    const two = await collect(provider, { model: 'sandbox-chat', provider: 'sandbox', messages });
    expect(one).to.deep.equal(two);
    const deltas = one.filter((c): c is { delta: string } => 'delta' in c).map((c) => c.delta);
    expect(deltas.length).to.be.greaterThan(5);
    const text = deltas.join('');
    expect(text).to.equal(sandboxAnswer({ model: 'sandbox-chat', messages }));
    expect(text).to.match(/^\[sandbox answer\]/);
    expect(text).to.include('How do I plan a product launch?');
    const last = one.at(-1)!;
    expect(last).to.have.property('usage');
    expect((last as { usage: { input_tokens: number; output_tokens: number } }).usage).to.deep.equal({
      input_tokens: Math.ceil(messages[0]!.content.length / 4),
      output_tokens: Math.ceil(text.length / 4),
    });
    const other = await collect(provider, { model: 'sandbox-chat', provider: 'sandbox', messages: [{ role: 'user', content: 'Something else' }] });
    expect(other).to.not.deep.equal(one);
  });

  it('honours max_tokens and stops when aborted', async () => {
    const provider = new SandboxChatProvider();
    const short = await collect(provider, { model: 'sandbox-chat', provider: 'sandbox', messages, parameters: { max_tokens: 3 } });
    expect(short.filter((c) => 'delta' in c)).to.have.length(3);
    const controller = new AbortController();
    const seen: string[] = [];
    let failure: unknown;
    try {
      for await (const chunk of provider.stream({ model: 'sandbox-chat', provider: 'sandbox', messages, signal: controller.signal })) {
        if ('delta' in chunk) seen.push(chunk.delta);
        if (seen.length === 2) controller.abort();
      }
    } catch (error) {
      failure = error;
    }
    expect(seen).to.have.length(2);
    expect(failure).to.be.instanceOf(Error);
  });
});
