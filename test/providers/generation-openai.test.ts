import type { IncomingMessage, ServerResponse } from 'node:http';
import { expect } from 'chai';
import { ReadFailure } from '../../src/core/read-failure.ts';
import { OpenAiGenerationProvider, type OpenAiGenerationOptions } from '../../src/providers/generation/openai.ts';
import { encodePng } from '../../src/providers/generation/png.ts';
import type { GenerationKind } from '../../src/providers/generation/types.ts';
import { encodeWav } from '../../src/providers/generation/wav.ts';
import { type FakeUpstream, startUpstream, readJson, json } from '../support/upstream.ts';

const png = encodePng(3, 2, new Uint8Array(18).fill(200));
const wav = encodeWav(new Int16Array(8000), 8000);

/** The OpenAI-compatible adapter against a fake service on loopback; the model name picks the scenario. */
describe('providers: OpenAI-compatible generation', () => {
  let upstream: FakeUpstream;
  const attempts = new Map<string, number>();
  const seen: { path: string; headers: IncomingMessage['headers']; body: any }[] = [];

  const scenarios: Record<string, (res: ServerResponse, attempt: number) => void> = {
    'img-ok': (res) => json(res, 200, { created: 1, data: [{ b64_json: png.toString('base64') }] }),
    'img-rate-limited': (res, attempt) =>
      attempt === 1
        ? json(res, 429, { error: { message: 'slow down' } }, { 'retry-after': '1' })
        : json(res, 200, { data: [{ b64_json: png.toString('base64') }] }),
    'img-500': (res) => json(res, 500, { error: { message: 'GPU on fire' } }),
    'img-policy': (res) => json(res, 400, { error: { message: 'Your request was rejected by the safety system.' } }),
    'img-unauthorized': (res) => json(res, 401, { error: { message: 'bad key' } }),
    'img-not-image': (res) => json(res, 200, { data: [{ b64_json: Buffer.from('<html>not an image</html>').toString('base64') }] }),
    'img-no-data': (res) => json(res, 200, { data: [] }),
    'img-huge': (res) => json(res, 200, { data: [{ b64_json: 'A'.repeat(200_000) }] }),
    'tts-ok': (res) => {
      res.writeHead(200, { 'content-type': 'audio/wav' });
      res.end(wav);
    },
    'tts-mp3': (res) => {
      res.writeHead(200, { 'content-type': 'audio/wav' });
      res.end(Buffer.concat([Buffer.from('ID3'), Buffer.alloc(100)]));
    },
    'chat-ok': (res) => json(res, 200, { choices: [{ message: { role: 'assistant', content: 'Roses are red.' } }], usage: { total_tokens: 17 } }),
    'chat-empty': (res) => json(res, 200, { choices: [] }),
  };

  before(async () => {
    const route = async (req: IncomingMessage, res: ServerResponse) => {
      const body = await readJson(req);
      seen.push({ path: req.url ?? '', headers: req.headers, body });
      const attempt = (attempts.get(body.model) ?? 0) + 1;
      attempts.set(body.model, attempt);
      scenarios[body.model]!(res, attempt);
    };
    upstream = await startUpstream({ '/v1/images/generations': route, '/v1/audio/speech': route, '/v1/chat/completions': route });
  });
  after(() => upstream.close());

  const generate = (kind: GenerationKind, model: string, options: Partial<OpenAiGenerationOptions> = {}, parameters: Record<string, unknown> = {}) =>
    new OpenAiGenerationProvider({ baseUrl: upstream.url, apiKey: 'sk-test', retryBaseMs: 10, ...options }).generate({
      kind,
      model,
      prompt: 'a tiny grey square',
      parameters,
      signal: new AbortController().signal,
      idempotencyKey: `gen-${model}`,
    });
  const failure = (kind: GenerationKind, model: string, options: Partial<OpenAiGenerationOptions> = {}) =>
    generate(kind, model, options).then(
      () => expect.fail(`${model} should fail`),
      (error: unknown) => {
        expect(error).to.be.instanceOf(ReadFailure);
        return error as ReadFailure;
      },
    );
  const requestFor = (model: string) => seen.find((s) => s.body?.model === model)!;

  it('generates an image from base64 JSON, with the bearer key and the idempotency key', async () => {
    const result = await generate('image', 'img-ok', {}, { width: 512, height: 256 });
    expect(result).to.deep.include({ sandbox: false, usage: { units: 1, unit: 'image' } });
    expect(result.files[0]).to.include({ contentType: 'image/png', extension: 'png', width: 3, height: 2 });
    expect(result.files[0]!.bytes.equals(png)).to.equal(true);
    const { path, headers, body } = requestFor('img-ok');
    expect(path).to.equal('/v1/images/generations');
    expect(headers.authorization).to.equal('Bearer sk-test');
    expect(headers['idempotency-key']).to.equal('gen-img-ok');
    expect(body).to.deep.equal({ model: 'img-ok', prompt: 'a tiny grey square', n: 1, size: '512x256', response_format: 'b64_json' });
  });

  it('generates speech as a checked WAV body, counting the input characters', async () => {
    const result = await generate('audio', 'tts-ok');
    expect(result.files[0]).to.include({ contentType: 'audio/wav', extension: 'wav', durationMs: 1000 });
    expect(result.files[0]!.bytes.equals(wav)).to.equal(true);
    expect(result.usage).to.deep.equal({ units: 'a tiny grey square'.length, unit: 'characters' });
    const { path, headers, body } = requestFor('tts-ok');
    expect(path).to.equal('/v1/audio/speech');
    expect(headers['idempotency-key']).to.equal('gen-tts-ok');
    expect(body).to.deep.equal({ model: 'tts-ok', input: 'a tiny grey square', voice: 'alloy', response_format: 'wav' });
  });

  it('generates text from a non-streaming chat completion, counting tokens', async () => {
    const result = await generate('text', 'chat-ok');
    expect(result.files[0]!.bytes.toString('utf8')).to.equal('Roses are red.');
    expect(result.files[0]!.contentType).to.equal('text/plain; charset=utf-8');
    expect(result.usage).to.deep.equal({ units: 17, unit: 'tokens' });
    const { path, body } = requestFor('chat-ok');
    expect(path).to.equal('/v1/chat/completions');
    expect(body).to.deep.equal({ model: 'chat-ok', messages: [{ role: 'user', content: 'a tiny grey square' }] });
  });

  it('refuses video without calling the service', async () => {
    const before = upstream.requests.length;
    expect((await failure('video', 'any-video')).kind).to.equal('refused');
    expect(upstream.requests.length).to.equal(before);
  });

  it('waits as long as Retry-After asks after a 429, resending the same idempotency key', async () => {
    const started = Date.now();
    await generate('image', 'img-rate-limited');
    expect(Date.now() - started).to.be.at.least(900);
    const sent = seen.filter((s) => s.body?.model === 'img-rate-limited').map((s) => s.headers['idempotency-key']);
    expect(sent).to.deep.equal(['gen-img-rate-limited', 'gen-img-rate-limited']);
  });

  it('fails once the retries of 5xx are exhausted, with the upstream message', async () => {
    const error = await failure('image', 'img-500', { maxRetries: 2 });
    expect(error.kind).to.equal('failed');
    expect(error.message).to.contain('500').and.contain('3 attempts').and.contain('GPU on fire');
    expect(attempts.get('img-500')).to.equal(3);
  });

  it('maps 400 to refused and 401 to failed, without retrying', async () => {
    const refused = await failure('image', 'img-policy');
    expect(refused.kind).to.equal('refused');
    expect(refused.message).to.contain('safety system');
    expect((await failure('image', 'img-unauthorized')).kind).to.equal('failed');
    expect(attempts.get('img-policy')).to.equal(1);
  });

  it('refuses bytes that are not the promised format, missing fields and oversize answers as malformed', async () => {
    expect((await failure('image', 'img-not-image')).kind).to.equal('malformed');
    expect((await failure('image', 'img-no-data')).kind).to.equal('malformed');
    expect((await failure('audio', 'tts-mp3')).kind).to.equal('malformed');
    expect((await failure('text', 'chat-empty')).kind).to.equal('malformed');
    const huge = await failure('image', 'img-huge', { maxResponseBytes: 64 * 1024 });
    expect(huge.kind).to.equal('malformed');
    expect(huge.message).to.contain('larger than');
  });
});
