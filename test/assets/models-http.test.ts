import { expect } from 'chai';
import type { IncomingMessage } from 'node:http';
import { createOrganization } from '../support/organizations.ts';
import { newUser, startTestServer, type TestServer, type TestUser } from '../support/server.ts';
import { startUpstream, type FakeUpstream } from '../support/upstream.ts';

const readJson = (req: IncomingMessage) =>
  new Promise<any>((resolve) => {
    let text = '';
    req.on('data', (chunk) => (text += chunk));
    req.on('end', () => resolve(text ? JSON.parse(text) : undefined));
  });

/** The HTTP model provider (MODELS_API_URL set) against a fake model service on loopback. */
describe('assets: HTTP model provider', () => {
  let upstream: FakeUpstream;
  let server: TestServer;
  let alice: TestUser;
  let org: string;
  const seen: { path: string; authorization: string | undefined; body: any }[] = [];
  let failNext = false;

  before(async () => {
    upstream = await startUpstream({
      '/v1/models': (req, res) => {
        seen.push({ path: req.url!, authorization: req.headers.authorization, body: undefined });
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ models: [{ id: 'vision-pro', name: 'Vision Pro', capabilities: ['prompt_extraction'], asset_types: ['image'] }] }));
      },
      '/v1/prompts/extract': async (req, res) => {
        const body = await readJson(req);
        seen.push({ path: req.url!, authorization: req.headers.authorization, body });
        if (failNext) {
          failNext = false;
          res.writeHead(502);
          res.end();
          return;
        }
        if (body.model === 'no-such-model') {
          res.writeHead(404, { 'content-type': 'application/json' });
          res.end('{}');
          return;
        }
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ model: body.model ?? 'vision-pro', prompt: `a photo titled ${body.asset.title}` }));
      },
      '/v1/voices/detect': async (req, res) => {
        const body = await readJson(req);
        seen.push({ path: req.url!, authorization: req.headers.authorization, body });
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ voices: [{ id: 'v1', name: 'Narrator', language: 'fr', first_heard_at: 1.5 }] }));
      },
    });
    server = await startTestServer({ MODELS_API_URL: `${upstream.url}/`, MODELS_API_KEY: 'models-key-123' });
    alice = newUser();
    org = await createOrganization(server, alice);
  });
  after(async () => {
    await server.stop();
    await upstream.close();
  });

  it('lists the upstream models with the API key, not marked sandbox', async () => {
    const res = await server.request('get', '/assets/models', { token: alice.token });
    expect(res.status).to.equal(200);
    expect(res.body).to.deep.equal({
      items: [{ id: 'vision-pro', name: 'Vision Pro', capabilities: ['prompt_extraction'], asset_types: ['image'] }],
      sandbox: false,
    });
    expect(seen.at(-1)).to.deep.include({ path: '/v1/models', authorization: 'Bearer models-key-123' });
  });

  it('extracts a prompt through the upstream, sending the asset but not the caller', async () => {
    const created = await server.request('post', '/assets', { token: alice.token, body: { organization_id: org, type: 'image', title: 'Harbour at dawn' } });
    const res = await server.request('post', `/assets/${created.body.id}/prompt`, { token: alice.token, body: { instructions: 'short' } });
    expect(res.status).to.equal(200);
    expect(res.body).to.deep.equal({ asset_id: created.body.id, model: 'vision-pro', prompt: 'a photo titled Harbour at dawn', sandbox: false });
    expect(seen.at(-1)!.body).to.deep.equal({
      asset: { id: created.body.id, type: 'image', title: 'Harbour at dawn', mime_type: null, url: null, content: null },
      model: null,
      instructions: 'short',
    });
  });

  it('maps an unknown model to 400 on `model` and an upstream failure to 503', async () => {
    const created = await server.request('post', '/assets', { token: alice.token, body: { organization_id: org, type: 'image' } });
    const unknown = await server.request('post', `/assets/${created.body.id}/prompt`, { token: alice.token, body: { model: 'no-such-model' } });
    expect(unknown.status).to.equal(400);
    expect(unknown.body.data.issues[0].path).to.deep.equal(['model']);
    failNext = true;
    const failed = await server.request('post', `/assets/${created.body.id}/prompt`, { token: alice.token, body: {} });
    expect(failed.status).to.equal(503);
    expect(failed.body.message).to.match(/502/);
  });

  it('detects voices of an audio asset through the upstream', async () => {
    const created = await server.request('post', '/assets', { token: alice.token, body: { organization_id: org, type: 'audio', title: 'Podcast' } });
    const res = await server.request('get', `/assets/${created.body.id}/voices`, { token: alice.token });
    expect(res.status).to.equal(200);
    expect(res.body).to.deep.equal({ asset_id: created.body.id, items: [{ id: 'v1', name: 'Narrator', language: 'fr', first_heard_at: 1.5 }], sandbox: false });
  });
});
