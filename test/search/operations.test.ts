import { expect } from 'chai';
import { z } from '../../src/core/zod.ts';
import { isReadFailure } from '../../src/core/read-failure.ts';
import { chargeOf, quoteOf } from '../../src/metering/operation.ts';
import type { Deps } from '../../src/platform/deps.ts';
import { createSearchProvider } from '../../src/providers/search/index.ts';
import { searchOperation, searchOperations, type searchOutput } from '../../src/search/index.ts';
import { testConfig } from '../support/config.ts';
import { startUpstream, type FakeUpstream } from '../support/upstream.ts';

/** The search and read_url declarations: schemas, prices, and sandbox/loopback output against their own output schema. */
describe('search operations (declarations)', () => {
  let upstream: FakeUpstream;
  let deps: Deps;
  const samples: Record<string, () => Record<string, unknown>> = {
    search: () => ({ query: 'how do foxes hunt in winter', limit: 15 }),
    read_url: () => ({ url: `${upstream.url}/page` }),
  };

  before(async () => {
    upstream = await startUpstream({
      '/page': (_req, res) => {
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
        res.end('<html lang="en"><head><title>Sample</title></head><body><p>A sample page with <a href="/next">a link</a>.</p></body></html>');
      },
    });
    const config = testConfig({ OUTBOUND_ALLOWLIST: `127.0.0.1:${upstream.port}` });
    deps = { config, providers: { search: createSearchProvider({}) } } as unknown as Deps;
  });
  after(() => upstream.close());

  const perform = (name: string, input: unknown) => {
    const operation = searchOperation(name)!;
    const parsed = operation.input.parse(input);
    return operation.perform(parsed, { deps, signal: new AbortController().signal, maxPages: operation.maxPages(parsed) });
  };

  it('declares search and read_url, found by name', () => {
    expect(searchOperations.map((operation) => operation.name)).to.deep.equal(['search', 'read_url']);
    expect(searchOperation('read_url')?.name).to.equal('read_url');
    expect(searchOperation('nope')).to.equal(undefined);
  });

  for (const operation of searchOperations) {
    describe(operation.name, () => {
      it('has JSON Schemas for its input and output, with summary required', () => {
        const input = z.toJSONSchema(operation.input, { io: 'input' }) as { type: string; additionalProperties: boolean };
        expect(input.type).to.equal('object');
        expect(input.additionalProperties).to.equal(false);
        const output = z.toJSONSchema(operation.output) as { required: string[]; properties: Record<string, unknown> };
        expect(output.required).to.include('summary');
        expect(operation.description.length).to.be.greaterThan(20);
      });

      it('produces output that validates against its output schema, the same each time', async () => {
        const first = await perform(operation.name, samples[operation.name]!());
        const parsed = operation.output.safeParse(first.result);
        expect(parsed.success, JSON.stringify(parsed.error?.issues)).to.equal(true);
        expect(first.pages).to.be.within(1, operation.maxPages(operation.input.parse(samples[operation.name]!())));
        const second = await perform(operation.name, samples[operation.name]!());
        expect(second).to.deep.equal(first);
      });

      it('rejects unknown fields by name', () => {
        const result = operation.input.safeParse({ ...samples[operation.name]!(), surprise: 1 });
        expect(result.success).to.equal(false);
        expect(JSON.stringify(result.error?.issues)).to.contain('surprise');
      });
    });
  }

  it('search: validates query, limit, site and recency, naming the field', () => {
    const input = searchOperation('search')!.input;
    const fieldOf = (value: unknown) => input.safeParse(value).error?.issues[0]?.path.join('.');
    expect(fieldOf({})).to.equal('query');
    expect(fieldOf({ query: '' })).to.equal('query');
    expect(fieldOf({ query: 'x'.repeat(401) })).to.equal('query');
    expect(fieldOf({ query: 'a\nb' })).to.equal('query');
    expect(fieldOf({ query: 'foxes', limit: 0 })).to.equal('limit');
    expect(fieldOf({ query: 'foxes', limit: 51 })).to.equal('limit');
    expect(fieldOf({ query: 'foxes', limit: 2.5 })).to.equal('limit');
    expect(fieldOf({ query: 'foxes', site: 'https://example.org/path' })).to.equal('site');
    expect(fieldOf({ query: 'foxes', recency: 'decade' })).to.equal('recency');
    expect(input.parse({ query: ' foxes ', site: 'Example.ORG' })).to.deep.equal({ query: 'foxes', limit: 10, site: 'example.org' });
  });

  it('read_url: validates the url, naming the field', () => {
    const input = searchOperation('read_url')!.input;
    const fieldOf = (value: unknown) => input.safeParse(value).error?.issues[0]?.path.join('.');
    expect(fieldOf({})).to.equal('url');
    expect(fieldOf({ url: 'not a url' })).to.equal('url');
    expect(fieldOf({ url: 'ftp://example.org/file' })).to.equal('url');
    expect(fieldOf({ url: 'file:///etc/passwd' })).to.equal('url');
    expect(fieldOf({ url: `https://example.org/${'a'.repeat(2048)}` })).to.equal('url');
    expect(input.parse({ url: 'https://example.org/a' })).to.deep.equal({ url: 'https://example.org/a' });
  });

  it('prices: search 1 + 1 per page of 10 results; read_url a flat 2', () => {
    const searchOp = searchOperation('search')!;
    expect(quoteOf(searchOp, searchOp.input.parse({ query: 'foxes' }))).to.deep.equal({ credits: 2, pages: 1 });
    expect(quoteOf(searchOp, searchOp.input.parse({ query: 'foxes', limit: 50 }))).to.deep.equal({ credits: 6, pages: 5 });
    expect(chargeOf(searchOp, 5, 2)).to.equal(3);
    const readOp = searchOperation('read_url')!;
    expect(quoteOf(readOp, readOp.input.parse({ url: 'https://example.org/' }))).to.deep.equal({ credits: 2, pages: 1 });
  });

  it('search sandbox: honours limit, site and recency; special queries time out or break the schema', async () => {
    const operation = searchOperation('search')!;
    const { result, pages } = await perform('search', { query: 'foxes', limit: 23, site: 'example.org', recency: 'week' });
    const output = operation.output.parse(result) as z.infer<typeof searchOutput>;
    expect(pages).to.equal(3);
    expect(output.results).to.have.length(23);
    for (const hit of output.results) {
      expect(new URL(hit.url).hostname).to.match(/(^|\.)example\.org$/);
      expect(Date.now() - Date.parse(hit.published_at!)).to.be.within(0, 7 * 86_400_000);
    }
    expect(output.summary).to.contain('sandbox');
    const other = await perform('search', { query: 'badgers', limit: 23 });
    expect(other.result).to.not.deep.equal(result);

    const failure = await perform('search', { query: 'sandbox-timeout' }).catch((error: unknown) => error);
    expect(isReadFailure(failure) && failure.kind).to.equal('timeout');
    const malformed = await perform('search', { query: 'sandbox-malformed' });
    expect(operation.output.safeParse(malformed.result).success).to.equal(false);
  });
});
