import type { IncomingMessage, ServerResponse } from 'node:http';
import { expect } from 'chai';
import { isReadFailure, type ReadFailureKind } from '../../src/core/read-failure.ts';
import { HttpSearchProvider, type SearchQuery } from '../../src/providers/search/index.ts';
import { startUpstream, type FakeUpstream, readJson, json } from '../support/upstream.ts';

const hit = (n: number, extra: Record<string, unknown> = {}) => ({ title: `Result ${n}`, url: `https://example.org/${n}`, snippet: `Snippet ${n}`, ...extra });

/** The HTTP search adapter against a fake search service on loopback; the scenario is picked by the query. */
describe('providers: HTTP search', () => {
  let upstream: FakeUpstream;
  const seen: { authorization: string | undefined; body: any; at: number }[] = [];
  const attempts = new Map<string, number>();

  const scenarios: Record<string, (req: IncomingMessage, res: ServerResponse, attempt: number, body: any) => void> = {
    ok: (_req, res, _attempt, body) =>
      json(res, 200, {
        results: [
          hit(1, { site_name: 'Example', published_at: '2024-05-01T12:00:00+02:00', extra: 'ignored' }),
          hit(2, { published_at: 'not a date', snippet: null }),
          { title: 'Not the web', url: 'javascript:alert(1)' },
          ...Array.from({ length: 30 }, (_, i) => hit(i + 3)),
        ].slice(0, body.limit + 1),
      }),
    'reports-pages': (_req, res) => json(res, 200, { results: [hit(1)], pages: 2 }),
    'site-ignored': (_req, res) =>
      json(res, 200, { results: [hit(1), { ...hit(2), url: 'https://elsewhere.net/2' }, { ...hit(3), url: 'https://docs.example.org/3' }] }),
    'rate-limited-once': (_req, res, attempt) =>
      attempt === 1 ? json(res, 429, { error: 'slow down' }, { 'retry-after': '0.3' }) : json(res, 200, { results: [hit(1)] }),
    'retry-after-long': (_req, res, attempt) => (attempt === 1 ? json(res, 503, {}, { 'retry-after': '3600' }) : json(res, 200, { results: [hit(1)] })),
    'always-502': (_req, res) => json(res, 502, { error: 'bad gateway' }),
    'bad-request': (_req, res) => json(res, 400, { error: 'query too odd' }),
    unauthorized: (_req, res) => json(res, 401, { error: 'bad key' }),
    slow: (_req, res) => setTimeout(() => json(res, 200, { results: [] }), 1_000),
    'slow-body': (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"results": [');
    },
    huge: (_req, res) => json(res, 200, { results: Array.from({ length: 5_000 }, (_, i) => hit(i, { snippet: 'x'.repeat(200) })) }),
    'not-json': (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end('<html>oops</html>');
    },
    'wrong-shape': (_req, res) => json(res, 200, { items: [] }),
  };

  before(async () => {
    upstream = await startUpstream({
      '/v1/search': async (req, res) => {
        const body = await readJson(req);
        seen.push({ authorization: req.headers.authorization, body, at: Date.now() });
        const attempt = (attempts.get(body.query) ?? 0) + 1;
        attempts.set(body.query, attempt);
        scenarios[body.query]!(req, res, attempt, body);
      },
    });
  });
  after(() => upstream.close());
  beforeEach(() => {
    seen.length = 0;
    attempts.clear();
  });

  const provider = (tuning: Partial<ConstructorParameters<typeof HttpSearchProvider>[0]> = {}) =>
    new HttpSearchProvider({ baseUrl: upstream.url, apiKey: 'search-key', retryBaseMs: 10, maxBodyBytes: 100_000, ...tuning });
  const search = (query: string, extra: Partial<SearchQuery> = {}, tuning = {}) =>
    provider(tuning).search({ query, limit: 10, ...extra }, { signal: new AbortController().signal, maxPages: 5 });
  const failure = async (promise: Promise<unknown>, kind: ReadFailureKind, message?: RegExp) => {
    const error = await promise.then(
      () => expect.fail('expected a ReadFailure'),
      (caught: unknown) => caught,
    );
    expect(isReadFailure(error), String(error)).to.equal(true);
    expect((error as Error & { kind: string }).kind).to.equal(kind);
    if (message) expect((error as Error).message).to.match(message);
  };

  it('posts {query, limit} with the bearer key and maps the results', async () => {
    const { result, pages } = await search('ok', { limit: 12 });
    expect(seen).to.have.length(1);
    expect(seen[0]!.authorization).to.equal('Bearer search-key');
    expect(seen[0]!.body).to.deep.equal({ query: 'ok', limit: 12 });
    expect(pages).to.equal(2);
    expect(result.query).to.equal('ok');
    expect(result.results).to.have.length(12);
    expect(result.results[0]).to.deep.equal({
      title: 'Result 1',
      url: 'https://example.org/1',
      snippet: 'Snippet 1',
      site_name: 'Example',
      published_at: '2024-05-01T10:00:00.000Z',
    });
    // An unreadable date is dropped, a null snippet becomes empty, a non-web URL is skipped.
    expect(result.results[1]).to.deep.equal({ title: 'Result 2', url: 'https://example.org/2', snippet: '' });
    expect(result.results.map((r) => r.url)).to.not.include('javascript:alert(1)');
    expect(result.summary).to.equal('12 results for "ok"');
  });

  it('forwards site and recency, and enforces site itself; pages as the service reports them', async () => {
    const { result } = await search('site-ignored', { site: 'example.org', recency: 'week' });
    expect(seen[0]!.body).to.deep.equal({ query: 'site-ignored', limit: 10, site: 'example.org', recency: 'week' });
    expect(result.results.map((r) => r.url)).to.deep.equal(['https://example.org/1', 'https://docs.example.org/3']);
    expect(result.summary).to.equal('2 results for "site-ignored" on example.org from the last week');
    expect((await search('reports-pages')).pages).to.equal(2);
  });

  it('retries a 429, waiting as Retry-After says', async () => {
    const { result } = await search('rate-limited-once');
    expect(result.results).to.have.length(1);
    expect(seen).to.have.length(2);
    expect(seen[1]!.at - seen[0]!.at).to.be.at.least(280);
  });

  it('caps a long Retry-After', async () => {
    const started = Date.now();
    await search('retry-after-long', {}, { retryMaxMs: 50 });
    expect(Date.now() - started).to.be.below(1_000);
    expect(seen).to.have.length(2);
  });

  it('gives up on repeated 5xx: failed, after the retries', async () => {
    await failure(search('always-502', {}, { maxRetries: 2 }), 'failed', /502 after 3 attempts/);
    expect(seen).to.have.length(3);
  });

  it('does not retry other 4xx: 400 is refused, 401 failed', async () => {
    await failure(search('bad-request'), 'refused', /400/);
    await failure(search('unauthorized'), 'failed', /401/);
    expect(seen).to.have.length(2);
  });

  it('times out waiting for headers or body', async () => {
    await failure(search('slow', {}, { headersTimeoutMs: 200 }), 'timeout');
    await failure(search('slow-body', {}, { bodyTimeoutMs: 200 }), 'timeout');
  });

  it('answers malformed for an oversize, non-JSON or wrongly shaped body', async () => {
    await failure(search('huge'), 'malformed', /is larger than 100000 bytes/);
    await failure(search('not-json'), 'malformed', /not JSON/);
    await failure(search('wrong-shape'), 'malformed', /results/);
  });

  it('fails when the service cannot be reached, and stops when aborted', async () => {
    const gone = new HttpSearchProvider({ baseUrl: 'http://127.0.0.1:1', maxRetries: 1, retryBaseMs: 5 });
    await failure(gone.search({ query: 'x', limit: 1 }, { signal: new AbortController().signal, maxPages: 1 }), 'failed', /unreachable/);
    const controller = new AbortController();
    const pending = provider().search({ query: 'slow', limit: 1 }, { signal: controller.signal, maxPages: 1 });
    setTimeout(() => controller.abort(new Error('canceled')), 50);
    const error = await pending.catch((caught: unknown) => caught);
    expect((error as Error).message).to.equal('canceled');
  });
});
