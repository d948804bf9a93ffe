import { createHmac } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { expect } from 'chai';
import { ReadFailure } from '../../src/core/read-failure.ts';
import { encodePng } from '../../src/providers/generation/png.ts';
import { PredictionGenerationProvider, verifyPredictionWebhook } from '../../src/providers/generation/prediction.ts';
import type { GenerationKind, GenerationRequest } from '../../src/providers/generation/types.ts';
import { encodeWav } from '../../src/providers/generation/wav.ts';
import { type FakeUpstream, startUpstream, readJson, sleep } from '../support/upstream.ts';

const json = (res: ServerResponse, status: number, body: unknown) => {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
};
const png = encodePng(4, 4, new Uint8Array(48).fill(90));
const wav = encodeWav(new Int16Array(4000), 8000);

/** The prediction adapter against a fake Replicate-like service on loopback; the model name is the prediction id and the scenario. */
describe('providers: prediction generation service', () => {
  let upstream: FakeUpstream;
  let elsewhere: FakeUpstream;
  const created: { headers: IncomingMessage['headers']; body: any }[] = [];
  const polls = new Map<string, number>();
  const canceled: string[] = [];

  /** What GET /v1/predictions/{id} answers on poll number `poll` (1-based); the create answer is poll 0. */
  const scenarios: Record<string, (poll: number) => Record<string, unknown>> = {
    ok: (poll) =>
      poll === 0
        ? { status: 'starting' }
        : poll === 1
          ? { status: 'processing', progress: 0.5 }
          : { status: 'succeeded', progress: 1, output: [`${upstream.url}/files/ok.png`], metrics: { predict_time: 2.5 } },
    'data-uri': () => ({ status: 'succeeded', output: `data:audio/wav;base64,${wav.toString('base64')}` }),
    text: (poll) => (poll === 0 ? { status: 'starting' } : { status: 'succeeded', output: ['Hello', ', world'] }),
    failed: (poll) => (poll === 0 ? { status: 'starting' } : { status: 'failed', error: 'NSFW content detected' }),
    foreign: () => ({ status: 'succeeded', output: ['https://files.example.com/out.png'] }),
    'other-port': () => ({ status: 'succeeded', output: [`${elsewhere.url}/files/ok.png`] }),
    'not-media': () => ({ status: 'succeeded', output: [`${upstream.url}/files/page.html`] }),
    stuck: () => ({ status: 'processing' }),
  };

  before(async () => {
    elsewhere = await startUpstream({ '/files/ok.png': (_req, res) => res.end(png) });
    const routes: Record<string, (req: IncomingMessage, res: ServerResponse) => void> = {
      '/v1/predictions': async (req, res) => {
        const body = await readJson(req);
        created.push({ headers: req.headers, body });
        json(res, 201, { id: body.model, ...scenarios[body.model]!(0) });
      },
      '/files/ok.png': (_req, res) => res.end(png),
      '/files/page.html': (_req, res) => res.end('<html></html>'),
    };
    for (const [id, answer] of Object.entries(scenarios)) {
      routes[`/v1/predictions/${id}`] = (_req, res) => {
        const poll = (polls.get(id) ?? 0) + 1;
        polls.set(id, poll);
        json(res, 200, { id, ...answer(poll) });
      };
      routes[`/v1/predictions/${id}/cancel`] = (_req, res) => {
        canceled.push(id);
        json(res, 200, { id, status: 'canceled' });
      };
    }
    upstream = await startUpstream(routes);
  });
  after(async () => {
    await upstream.close();
    await elsewhere.close();
  });

  const provider = () =>
    new PredictionGenerationProvider({
      baseUrl: upstream.url,
      apiKey: 'r8-test',
      webhookUrl: 'https://app.test/hooks/predictions',
      pollInitialMs: 10,
      pollMaxMs: 40,
      webhookPollMs: 80,
      retryBaseMs: 10,
    });
  const request = (kind: GenerationKind, model: string, extra: Partial<GenerationRequest> = {}): GenerationRequest => ({
    kind,
    model,
    prompt: 'a lighthouse at night',
    parameters: { width: 256, guidance: 7 },
    signal: new AbortController().signal,
    idempotencyKey: `gen-${model}`,
    ...extra,
  });
  const failure = (kind: GenerationKind, model: string) =>
    provider()
      .generate(request(kind, model))
      .then(
        () => expect.fail(`${model} should fail`),
        (error: unknown) => {
          expect(error).to.be.instanceOf(ReadFailure);
          return error as ReadFailure;
        },
      );

  it('creates a prediction, polls it with progress until it succeeds, and fetches the same-host file', async () => {
    const progress: number[] = [];
    const result = await provider().generate(request('image', 'ok', { onProgress: (p) => progress.push(p) }));
    expect(result).to.deep.include({ sandbox: false, providerJobId: 'ok', usage: { units: 2.5, unit: 'seconds' } });
    expect(result.files).to.have.length(1);
    expect(result.files[0]).to.include({ contentType: 'image/png', width: 4, height: 4 });
    expect(result.files[0]!.bytes.equals(png)).to.equal(true);
    expect(progress).to.deep.equal([0.5, 1]);
    const create = created.find((c) => c.body.model === 'ok')!;
    expect(create.headers.authorization).to.equal('Bearer r8-test');
    expect(create.headers['idempotency-key']).to.equal('gen-ok');
    expect(create.body).to.deep.equal({
      model: 'ok',
      input: { width: 256, guidance: 7, prompt: 'a lighthouse at night' },
      webhook: 'https://app.test/hooks/predictions',
    });
    expect(upstream.requests.filter((path) => path.includes('/ok') || path === '/v1/predictions').slice(-4)).to.deep.equal([
      '/v1/predictions',
      '/v1/predictions/ok',
      '/v1/predictions/ok',
      '/files/ok.png',
    ]);
  });

  it('takes a base64 data URI output, and a text output given in pieces', async () => {
    const audio = await provider().generate(request('audio', 'data-uri'));
    expect(audio.files[0]).to.include({ contentType: 'audio/wav', durationMs: 500 });
    expect(audio.usage).to.deep.equal({ units: 1, unit: 'audio' });
    const text = await provider().generate(request('text', 'text'));
    expect(text.files[0]!.bytes.toString('utf8')).to.equal('Hello, world');
    expect(text.usage).to.deep.equal({ units: 12, unit: 'characters' });
  });

  it('fails with the upstream error when the prediction fails', async () => {
    const error = await failure('image', 'failed');
    expect(error.kind).to.equal('failed');
    expect(error.message).to.contain('NSFW content detected');
  });

  it('refuses output URLs on another host or port, and bytes that are not media, as malformed', async () => {
    const before = elsewhere.requests.length;
    expect((await failure('image', 'foreign')).message).to.contain('another host');
    expect((await failure('image', 'other-port')).kind).to.equal('malformed');
    expect(elsewhere.requests.length).to.equal(before);
    expect((await failure('image', 'not-media')).kind).to.equal('malformed');
  });

  it('cancels the prediction upstream when the signal aborts, and rethrows the abort', async () => {
    const controller = new AbortController();
    const reason = new Error('generation canceled');
    setTimeout(() => controller.abort(reason), 100);
    const error = await provider()
      .generate(request('video', 'stuck', { signal: controller.signal }))
      .catch((e: unknown) => e);
    expect(error).to.equal(reason);
    for (let i = 0; i < 50 && canceled.length === 0; i++) await sleep(10);
    expect(canceled).to.deep.equal(['stuck']);
    expect(polls.get('stuck')).to.be.at.least(2);
  });

  it('hands the prediction id over before any wait, stops where its wait throws, and resumes that prediction without creating another', async () => {
    const submitted: string[] = [];
    const stop = new Error('continue later');
    const waits: number[] = [];
    const first = await provider()
      .generate(
        request('image', 'ok', {
          onSubmitted: async (id) => void submitted.push(id),
          wait: async (ms) => {
            waits.push(ms);
            throw stop;
          },
        }),
      )
      .catch((e: unknown) => e);
    expect(first).to.equal(stop);
    expect(submitted).to.deep.equal(['ok']);
    expect(waits).to.deep.equal([10]);
    expect(canceled).to.not.include('ok');
    const creates = created.filter((c) => c.body.model === 'ok').length;
    polls.delete('ok');
    const resumed = await provider().generate(
      request('image', 'ok', { resume: 'ok', onSubmitted: async (id) => void submitted.push(id), wait: async (ms) => void waits.push(ms) }),
    );
    expect(resumed).to.deep.include({ providerJobId: 'ok', usage: { units: 2.5, unit: 'seconds' } });
    expect(created.filter((c) => c.body.model === 'ok').length).to.equal(creates);
    expect(submitted).to.deep.equal(['ok']);
    // Resumed: polled at once, then at the webhook's fallback pace (webhookPollMs), the webhook being set.
    expect(waits).to.deep.equal([10, 80]);
  });

  it('cancels and times out a prediction that outlives maxWaitMs', async () => {
    const error = await new PredictionGenerationProvider({ baseUrl: `${upstream.url}/v1`, pollInitialMs: 10, maxWaitMs: 60 })
      .generate(request('video', 'stuck'))
      .catch((e: unknown) => e);
    expect(error).to.be.instanceOf(ReadFailure).with.property('kind', 'timeout');
    expect(canceled.filter((id) => id === 'stuck')).to.have.length(2);
  });
});

describe('providers: prediction webhook verification', () => {
  const key = Buffer.from('a secret key of 24 bytes');
  const secret = `whsec_${key.toString('base64')}`;
  const id = 'msg_2Lh9KRb0pzN4LePd3XiA4';
  const now = 1_750_000_000_000;
  const timestamp = String(now / 1000);
  const body = '{"id":"ok","status":"succeeded"}';
  const sign = (content: string, signingKey = key) => `v1,${createHmac('sha256', signingKey).update(content).digest('base64')}`;
  const valid = sign(`${id}.${timestamp}.${body}`);
  const verify = (overrides: Partial<Parameters<typeof verifyPredictionWebhook>[0]> = {}) =>
    verifyPredictionWebhook({ secret, id, timestamp, body, signature: valid, now, ...overrides });

  it('accepts a valid signature, from a string or a Buffer body', () => {
    expect(verify()).to.equal(true);
    expect(verify({ body: Buffer.from(body) })).to.equal(true);
  });

  it('rejects a tampered body, a wrong secret, another id and a malformed header', () => {
    expect(verify({ body: body.replace('succeeded', 'failed') })).to.equal(false);
    expect(verify({ secret: `whsec_${Buffer.from('another key').toString('base64')}` })).to.equal(false);
    expect(verify({ id: 'msg_other' })).to.equal(false);
    expect(verify({ signature: valid.slice(3) })).to.equal(false);
    expect(verify({ signature: 'v1,short' })).to.equal(false);
  });

  it('rejects a timestamp outside the tolerance, either way', () => {
    expect(verify({ now: now + 301_000 })).to.equal(false);
    expect(verify({ now: now - 301_000 })).to.equal(false);
    expect(verify({ now: now + 299_000 })).to.equal(true);
    expect(verify({ now: now + 20_000, toleranceSeconds: 10 })).to.equal(false);
    expect(verify({ timestamp: 'yesterday' })).to.equal(false);
  });

  it('accepts any matching one of several space-separated signatures (secret rotation)', () => {
    const stale = sign(`${id}.${timestamp}.${body}`, Buffer.from('the old key'));
    expect(verify({ signature: `${stale} ${valid}` })).to.equal(true);
    expect(verify({ signature: `v2,${valid.slice(3)} ${stale}` })).to.equal(false);
  });
});
