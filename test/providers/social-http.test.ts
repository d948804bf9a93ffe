import type { IncomingMessage, ServerResponse } from 'node:http';
import { expect } from 'chai';
import { ReadFailure } from '../../src/core/read-failure.ts';
import { HttpSocialProvider, type HttpSocialOptions } from '../../src/providers/social/http.ts';
import { createSocialProvider } from '../../src/providers/social/index.ts';
import { type FakeUpstream, startUpstream, readJson, json, sleep } from '../support/upstream.ts';

const ok = (res: ServerResponse, pages = 1) => json(res, 200, { result: { summary: 'Ada has 3 followers', followers_count: 3 }, pages });

/** The HTTP social adapter against a fake social data service on loopback; each operation name is a scenario. */
describe('providers: HTTP social data service', () => {
  let upstream: FakeUpstream;
  const attempts = new Map<string, number>();
  const seen: { path: string; authorization: string | undefined; contentType: string | undefined; body: any }[] = [];
  const closedEarly: string[] = [];
  /** Requests the stalling route has received. */
  let stalled = 0;

  const scenarios: Record<string, (req: IncomingMessage, res: ServerResponse, attempt: number) => void | Promise<void>> = {
    net2_profile: (_req, res) => ok(res, 2),
    'rate-limited-once': (_req, res, attempt) => (attempt === 1 ? json(res, 429, { error: { message: 'slow down' } }, { 'retry-after': '1' }) : ok(res)),
    'retry-after-too-long': (_req, res, attempt) => (attempt === 1 ? json(res, 503, {}, { 'retry-after': '3600' }) : ok(res)),
    'unavailable-twice': (_req, res, attempt) => (attempt <= 2 ? json(res, 503, { error: 'warming up' }) : ok(res)),
    'always-500': (_req, res) => json(res, 500, { error: { message: 'upstream exploded' } }),
    'slow-headers': async (_req, res) => {
      await sleep(3_000);
      if (!res.destroyed) ok(res);
    },
    'slow-body': async (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"result":');
      await sleep(3_000);
      if (!res.destroyed) res.end('{"summary":"late"},"pages":1}');
    },
    oversize: (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      // No content-length: the cap must hold while streaming, not only on the header.
      for (let i = 0; i < 64; i++) res.write(`${'x'.repeat(1023)}\n`);
      res.end();
    },
    'oversize-declared': (_req, res) => json(res, 200, { result: { summary: 'y'.repeat(4096) }, pages: 1 }),
    'not-json': (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end('<html>maintenance</html>');
    },
    'wrong-envelope': (_req, res) => json(res, 200, { result: [], pages: 0 }),
    'no-pages': (_req, res) => json(res, 200, { result: { summary: 'x' } }),
    'not-found': (_req, res) => json(res, 404, { error: { message: 'no such account:\n  @nobody' } }),
    unprocessable: (_req, res) => json(res, 422, { message: 'post_id is not a post id' }),
    unauthorized: (_req, res) => json(res, 401, { error: 'bad key' }),
    // Never answers; records when the client hangs up (res 'close' before any end).
    stall: (_req, res) => {
      stalled += 1;
      res.on('close', () => closedEarly.push('stall'));
    },
  };

  before(async () => {
    const routes: Record<string, (req: IncomingMessage, res: ServerResponse) => void> = {};
    for (const [name, handler] of Object.entries(scenarios)) {
      routes[`/v1/social/${name}`] = async (req, res) => {
        const attempt = (attempts.get(name) ?? 0) + 1;
        attempts.set(name, attempt);
        const body = await readJson(req);
        seen.push({ path: req.url ?? '', authorization: req.headers.authorization, contentType: req.headers['content-type'], body });
        await handler(req, res, attempt);
      };
    }
    upstream = await startUpstream(routes);
  });
  after(() => upstream.close());

  const provider = (options: Partial<HttpSocialOptions> = {}) =>
    new HttpSocialProvider({ apiUrl: upstream.url, apiKey: 'secret-key', retryBaseMs: 10, headersTimeoutMs: 2_000, bodyTimeoutMs: 2_000, ...options });
  const read = (name: string, options: Partial<HttpSocialOptions> = {}, signal = new AbortController().signal) =>
    provider(options).read(name, { username: 'ada' }, { signal, maxPages: 3 });
  const failure = (name: string, options: Partial<HttpSocialOptions> = {}) =>
    read(name, options).then(
      () => expect.fail(`${name} should fail`),
      (error: unknown) => {
        expect(error).to.be.instanceOf(ReadFailure);
        return error as ReadFailure;
      },
    );

  it('posts the input and page budget with the bearer key, and returns the result and pages', async () => {
    const answer = await read('net2_profile');
    expect(answer).to.deep.equal({ result: { summary: 'Ada has 3 followers', followers_count: 3 }, pages: 2 });
    const request = seen.find((s) => s.path === '/v1/social/net2_profile')!;
    expect(request.authorization).to.equal('Bearer secret-key');
    expect(request.contentType).to.equal('application/json');
    expect(request.body).to.deep.equal({ input: { username: 'ada' }, max_pages: 3 });
  });

  it('accepts a base URL ending in /v1, sends no Authorization without a key, and is what createSocialProvider builds', async () => {
    const social = createSocialProvider({ apiUrl: `${upstream.url}/v1/` });
    expect(social.name).to.equal('http');
    expect(createSocialProvider({}).name).to.equal('sandbox');
    const before = seen.length;
    await social.read('net2_profile', { username: 'ada' }, { signal: new AbortController().signal, maxPages: 1 });
    expect(seen[before]?.authorization).to.equal(undefined);
    expect(seen[before]?.path).to.equal('/v1/social/net2_profile');
  });

  it('waits as long as Retry-After asks after a 429, then succeeds', async () => {
    const started = Date.now();
    expect((await read('rate-limited-once')).pages).to.equal(1);
    expect(Date.now() - started).to.be.at.least(900);
    expect(attempts.get('rate-limited-once')).to.equal(2);
  });

  it('caps a long Retry-After at retryMaxMs', async () => {
    const started = Date.now();
    await read('retry-after-too-long', { retryMaxMs: 50 });
    expect(Date.now() - started).to.be.below(2_000);
  });

  it('retries 503 twice with backoff, then succeeds', async () => {
    expect((await read('unavailable-twice')).pages).to.equal(1);
    expect(attempts.get('unavailable-twice')).to.equal(3);
  });

  it('fails after the retries are exhausted, with the upstream message', async () => {
    const error = await failure('always-500', { maxRetries: 2 });
    expect(error.kind).to.equal('failed');
    expect(error.message).to.contain('500').and.contain('3 attempts').and.contain('upstream exploded');
    expect(attempts.get('always-500')).to.equal(3);
  });

  it('retries a refused connection, then fails', async () => {
    const closed = await startUpstream({});
    const url = closed.url;
    await closed.close();
    const error = await new HttpSocialProvider({ apiUrl: url, retryBaseMs: 5, maxRetries: 2 })
      .read('net2_profile', {}, { signal: new AbortController().signal, maxPages: 1 })
      .catch((e: unknown) => e);
    expect(error).to.be.instanceOf(ReadFailure).with.property('kind', 'failed');
    expect((error as Error).message).to.contain('unreachable');
  });

  it('times out slow headers and a stalled body', async () => {
    // undici checks its timeouts on a coarse (about half-second) clock, so the stalls last 3 s.
    const started = Date.now();
    expect((await failure('slow-headers', { headersTimeoutMs: 100 })).kind).to.equal('timeout');
    expect((await failure('slow-body', { bodyTimeoutMs: 100 })).kind).to.equal('timeout');
    expect(Date.now() - started).to.be.below(2_900);
    expect(attempts.get('slow-headers')).to.equal(1);
  });

  it('refuses an answer over the size cap as malformed, streamed or declared', async () => {
    expect((await failure('oversize', { maxResponseBytes: 16 * 1024 })).kind).to.equal('malformed');
    expect((await failure('oversize-declared', { maxResponseBytes: 1024 })).kind).to.equal('malformed');
  });

  it('refuses non-JSON and a wrong envelope as malformed', async () => {
    for (const name of ['not-json', 'wrong-envelope', 'no-pages']) expect((await failure(name)).kind, name).to.equal('malformed');
  });

  it('maps 404 and 422 to refused with the trimmed upstream message, and other 4xx to failed, without retrying', async () => {
    const missing = await failure('not-found');
    expect(missing.kind).to.equal('refused');
    expect(missing.message).to.contain('no such account: @nobody');
    expect((await failure('unprocessable')).message).to.contain('post_id is not a post id');
    expect((await failure('unauthorized')).kind).to.equal('failed');
    expect(attempts.get('not-found')).to.equal(1);
  });

  it("stops the request when the caller's signal aborts, rethrowing the abort", async () => {
    const controller = new AbortController();
    const reason = new Error('read canceled');
    const pending = read('stall', {}, controller.signal).catch((e: unknown) => e);
    // Aborted once the service holds the request (on a busy machine it may take longer than any fixed delay to get there).
    for (let i = 0; i < 500 && stalled === 0; i++) await sleep(10);
    controller.abort(reason);
    expect(await pending).to.equal(reason);
    for (let i = 0; i < 500 && closedEarly.length === 0; i++) await sleep(10);
    expect(closedEarly).to.deep.equal(['stall']);
  });
});
