import { expect } from 'chai';
import { createConversation, createOrganization, newUser, type TestUser } from '../support/factories.ts';
import { useServer } from '../support/suite.ts';

/**
 * Models are honest: only models whose provider is configured (or the sandbox's) are listed and
 * accepted; another is a 400 naming the variable that enables it, never a 201 that fails later or
 * is answered by the sandbox and billed as the real model. Defaults are chosen by configuration.
 */
describe('honest models: listed and accepted only when their provider is configured', () => {
  describe('no provider configured (a fresh clone)', () => {
    const ctx = useServer();
    let alice: TestUser;
    let org: string;
    before(async () => {
      alice = newUser();
      org = await createOrganization(ctx.server, alice);
    });

    it('lists only the sandbox models', async () => {
      const models = await ctx.server.request('get', '/models/public', { token: alice.token });
      expect([...new Set(models.body.models.map((m: { provider: string }) => m.provider))]).to.deep.equal(['sandbox']);
      const available = await ctx.server.request('get', '/chat-models/available', { token: alice.token, query: { organization_id: org } });
      expect(available.body.items.map((m: { id: string }) => m.id)).to.deep.equal(['sandbox-chat']);
    });

    it('refuses an unconfigured model with 400 naming the variable: chat runs, scheduled tasks, generations and quotes', async () => {
      const conversation = await createConversation(ctx.server, alice, org);
      await ctx.server.request('post', `/conversations/${conversation.id}/messages`, { token: alice.token, body: { content: 'Hello?' } });
      const run = await ctx.server.request('post', `/conversations/${conversation.id}/run`, { token: alice.token, body: { model: 'gpt-4o-mini' } });
      expect(run.status).to.equal(400);
      expect(run.body.data.issues[0].path).to.deep.equal(['model']);
      expect(run.body.message).to.equal(
        'model: "gpt-4o-mini" cannot be used here: its provider (openai-compatible) is not configured on this server (set CHAT_API_URL)',
      );
      const task = await ctx.server.request('post', '/scheduled-tasks', {
        token: alice.token,
        body: { organization_id: org, title: 'x', prompt: 'y', schedule: { cron: '0 7 * * *', timezone: 'UTC' }, model: 'gpt-4o-mini' },
      });
      expect(task.status).to.equal(400);
      expect(task.body.message).to.match(/set CHAT_API_URL/);
      for (const path of ['/generations/quote', '/generations']) {
        const image = await ctx.server.request('post', path, {
          token: alice.token,
          body: { organization_id: org, kind: 'image', prompt: 'a fox', model: 'gpt-image-1' },
        });
        expect(image.status, path).to.equal(400);
        expect(image.body.message).to.equal(
          'model: "gpt-image-1" cannot be used here: its provider (openai-compatible) is not configured on this server (set GENERATION_OPENAI_URL)',
        );
        const video = await ctx.server.request('post', path, {
          token: alice.token,
          body: { organization_id: org, kind: 'video', prompt: 'a fox', model: 'video-prediction' },
        });
        expect(video.body.message).to.match(/\(set GENERATION_PREDICTION_URL\)$/);
      }
      expect(await ctx.db('generations').where({ organization_id: org })).to.deep.equal([]);
    });

    it('a run without a model uses the configured default (the sandbox), billed as the sandbox', async () => {
      const conversation = await createConversation(ctx.server, alice, org);
      await ctx.server.request('post', `/conversations/${conversation.id}/messages`, { token: alice.token, body: { content: 'Hello?' } });
      const run = await ctx.server.request('post', `/conversations/${conversation.id}/run`, { token: alice.token, body: {} });
      expect(run.status, JSON.stringify(run.body)).to.equal(201);
      expect(run.body.run.model).to.equal('sandbox-chat');
      const quote = await ctx.server.request('post', '/generations/quote', {
        token: alice.token,
        body: { organization_id: org, kind: 'image', prompt: 'a fox' },
      });
      expect(quote.body.model).to.equal('sandbox-image');
    });
  });

  describe('defaults chosen by configuration', () => {
    const ctx = useServer({ CHAT_DEFAULT_MODEL: 'gpt-4o-mini', GENERATION_DEFAULT_MODELS: 'image=gpt-image-1' });

    it('a default whose provider is not configured is refused naming the setting', async () => {
      const alice = newUser();
      const org = await createOrganization(ctx.server, alice);
      const conversation = await createConversation(ctx.server, alice, org);
      await ctx.server.request('post', `/conversations/${conversation.id}/messages`, { token: alice.token, body: { content: 'Hello?' } });
      const run = await ctx.server.request('post', `/conversations/${conversation.id}/run`, { token: alice.token, body: {} });
      expect(run.status).to.equal(400);
      expect(run.body.message).to.match(/^model: none given, and the default chat model "gpt-4o-mini" \(CHAT_DEFAULT_MODEL\) cannot be used/);
      const quote = await ctx.server.request('post', '/generations/quote', {
        token: alice.token,
        body: { organization_id: org, kind: 'image', prompt: 'a fox' },
      });
      expect(quote.status).to.equal(400);
      expect(quote.body.message).to.match(/GENERATION_OPENAI_URL\) \(the default for this kind, GENERATION_DEFAULT_MODELS\)$/);
      // Kinds it does not name keep the sandbox default.
      const audio = await ctx.server.request('post', '/generations/quote', {
        token: alice.token,
        body: { organization_id: org, kind: 'audio', prompt: 'a fox' },
      });
      expect(audio.body.model).to.equal('sandbox-audio');
    });
  });

  describe('a provider configured', () => {
    const ctx = useServer({ CHAT_API_URL: 'http://127.0.0.1:9/v1', GENERATION_PREDICTION_URL: 'http://127.0.0.1:9/' });

    it('lists and accepts its models', async () => {
      const alice = newUser();
      const org = await createOrganization(ctx.server, alice);
      const models = await ctx.server.request('get', '/models/public', { token: alice.token });
      const ids = models.body.models.map((m: { id: string }) => m.id);
      expect(ids).to.include.members(['gpt-4o-mini', 'gpt-4o', 'video-prediction', 'sandbox-chat']);
      expect(ids).not.to.include('gpt-image-1');
      const quote = await ctx.server.request('post', '/generations/quote', {
        token: alice.token,
        body: { organization_id: org, kind: 'video', prompt: 'a fox', model: 'video-prediction' },
      });
      expect(quote.status, JSON.stringify(quote.body)).to.equal(200);
    });
  });
});
