import { expect } from 'chai';
import { ReadFailure } from '../../src/core/read-failure.ts';
import { z } from '../../src/core/zod.ts';
import { chargeOf, networks, quoteOf, type ReadOperation } from '../../src/metering/operation.ts';
import { SandboxSocialProvider, sandboxOperations, sandboxPageSize } from '../../src/providers/social/sandbox.ts';
import { socialOperation, socialOperations } from '../../src/social/catalog/index.ts';
import { sampleInput } from '../support/read-samples.ts';

/** Spec §4.4, in its order, then resolve_mention. */
const SPEC_NAMES = [
  ...['profile', 'user_posts', 'user_reels', 'user_stories', 'user_highlights', 'highlight_stories', 'post', 'post_comments'].map((s) => `net1_${s}`),
  ...['search', 'profile', 'user_posts', 'post', 'post_comments', 'user_connections', 'tweet_engagers', 'trends'].map((s) => `net2_${s}`),
  ...['profile', 'user_posts', 'post', 'post_comments', 'search', 'hashtag_posts', 'music_posts', 'trending', 'trend_scan'].map((s) => `net3_${s}`),
  ...['channel', 'channel_videos', 'channel_playlists', 'channel_shorts', 'video', 'search', 'trending'].map((s) => `net4_${s}`),
  ...['page', 'page_posts', 'page_reels', 'post', 'post_comments', 'group', 'group_posts', 'search'].map((s) => `net5_${s}`),
  ...['profile', 'company', 'user_posts', 'company_posts', 'post', 'search_people', 'search_posts'].map((s) => `net6_${s}`),
  ...['search', 'subreddit_posts', 'post', 'post_comments'].map((s) => `net7_${s}`),
  'resolve_mention',
];

const shapeOf = (operation: ReadOperation) => (operation.input as unknown as z.ZodObject).shape;

const sandbox = new SandboxSocialProvider();
const read = (operation: ReadOperation, input: unknown, maxPages = operation.maxPages(input)) =>
  sandbox.read(operation.name, input, { signal: new AbortController().signal, maxPages });
const sizeOf = (input: Record<string, unknown>) => (typeof input.count === 'number' ? input.count : typeof input.limit === 'number' ? input.limit : undefined);

describe('social catalog (spec §4.4)', () => {
  it('has exactly the spec operations, in order, resolve_mention last, each once', () => {
    expect(socialOperations.map((o) => o.name)).to.deep.equal(SPEC_NAMES);
    expect(new Set(socialOperations.map((o) => o.name)).size).to.equal(52);
    expect([...sandboxOperations].sort()).to.deep.equal([...SPEC_NAMES].sort());
    expect(socialOperation('net2_profile')?.name).to.equal('net2_profile');
    expect(socialOperation('net9_profile')).to.equal(undefined);
    expect(socialOperation('constructor')).to.equal(undefined);
  });

  it('quotes the pages the sandbox fetches: the same page size in both', () => {
    for (const operation of socialOperations) {
      const field = ['count', 'limit'].find((key) => key in shapeOf(operation));
      const pageSize = sandboxPageSize(operation.name);
      if (!field) {
        expect(pageSize, operation.name).to.equal(undefined);
        continue;
      }
      if (pageSize === undefined) expect.fail(`${operation.name}: the sandbox has no page size`);
      for (const size of [1, 20, 99, 100]) expect(operation.maxPages({ [field]: size }), `${operation.name} ${size}`).to.equal(Math.ceil(size / pageSize));
    }
  });

  it('names each operation after its network, with a description and a price', () => {
    for (const operation of socialOperations) {
      if (operation.name === 'resolve_mention') expect(operation.network).to.equal(undefined);
      else {
        expect(networks).to.include(operation.network);
        expect(operation.name.startsWith(`${operation.network}_`), operation.name).to.equal(true);
      }
      expect(operation.description.length, operation.name).to.be.within(20, 300);
      for (const value of [operation.price.per_request, operation.price.per_page]) expect(Number.isInteger(value) && value >= 0, operation.name).to.equal(true);
    }
  });

  it('converts every input and output to JSON Schema: strict, described inputs and outputs with a summary', () => {
    for (const operation of socialOperations) {
      for (const io of ['input', 'output'] as const) {
        const input = z.toJSONSchema(operation.input, { io }) as { additionalProperties?: unknown; properties: Record<string, { description?: string }> };
        expect(input.additionalProperties, operation.name).to.equal(false);
        for (const [key, property] of Object.entries(input.properties)) expect(property.description, `${operation.name}.${key}`).to.be.a('string');
      }
      const output = z.toJSONSchema(operation.output) as { required: string[]; properties: Record<string, unknown> };
      expect(output.required, operation.name).to.include('summary');
      if ('items' in output.properties) expect(output.required, operation.name).to.include.members(['items', 'next_cursor']);
    }
  });

  for (const operation of socialOperations) {
    describe(operation.name, () => {
      it('answers a sample input from the sandbox: valid, summarised, deterministic, within count and quote', async () => {
        const input = operation.input.parse(sampleInput(operation)) as Record<string, unknown>;
        const quote = quoteOf(operation, input);
        const first = await read(operation, input, quote.pages);
        const parsed = operation.output.safeParse(first.result);
        expect(parsed.success, `${operation.name}: ${JSON.stringify(parsed.error?.issues)}`).to.equal(true);
        const result = parsed.data as { summary: string; items?: unknown[]; next_cursor?: string | null };
        expect(result.summary).to.match(/sandbox/i);
        expect(await read(operation, input, quote.pages)).to.deep.equal(first);
        const size = sizeOf(input);
        if (size !== undefined) expect(result.items?.length).to.be.at.most(size);
        expect(first.pages).to.be.within(1, quote.pages);
        expect(quote.credits).to.be.at.least(chargeOf(operation, quote.pages, first.pages));
      });

      const paged = 'cursor' in shapeOf(operation);
      if (paged)
        it('pages with next_cursor: page two continues exactly where page one stopped', async () => {
          const field = 'count' in shapeOf(operation) ? 'count' : 'limit';
          const base = sampleInput(operation);
          const both = (await read(operation, operation.input.parse({ ...base, [field]: 6 }))).result as { items: unknown[] };
          const one = (await read(operation, operation.input.parse({ ...base, [field]: 3 }))).result as { items: unknown[]; next_cursor: string | null };
          expect(one.next_cursor, 'the sample subject has more than three items').to.be.a('string');
          const two = (await read(operation, operation.input.parse({ ...base, [field]: 3, cursor: one.next_cursor }))).result as { items: unknown[] };
          expect([...one.items, ...two.items]).to.deep.equal(both.items);
        });

      it('refuses an unknown field and a missing subject, naming the field', () => {
        const sample = sampleInput(operation);
        const unknown = operation.input.safeParse({ ...sample, surprise: 1 });
        expect(unknown.success).to.equal(false);
        expect(JSON.stringify(unknown.error?.issues)).to.contain('surprise');
        for (const key of Object.keys(sample)) {
          const { [key]: _dropped, ...rest } = sample;
          const missing = operation.input.safeParse(rest);
          expect(missing.success, `${operation.name} without ${key}`).to.equal(false);
          expect(missing.error?.issues.some((issue) => issue.path.length > 0 && Object.hasOwn(shapeOf(operation), String(issue.path[0])))).to.equal(true);
        }
      });
    });
  }

  it('net2_profile is exactly spec §2.10 / §4.5', () => {
    const operation = socialOperation('net2_profile')!;
    const input = z.toJSONSchema(operation.input, { io: 'input' }) as { properties: Record<string, { type: string }>; required: string[] };
    expect(Object.keys(input.properties)).to.deep.equal(['username']);
    expect(input.properties.username?.type).to.equal('string');
    expect(input.required).to.deep.equal(['username']);
    expect(operation.input.safeParse({ username: '@ada' }).success).to.equal(false);
    const output = z.toJSONSchema(operation.output) as { properties: Record<string, { type: string }>; required: string[] };
    const types = Object.fromEntries(Object.entries(output.properties).map(([key, value]) => [key, value.type]));
    const strings = ['id', 'username', 'name', 'url', 'description', 'location', 'created_at', 'profile_image_url', 'summary'];
    const numbers = ['followers_count', 'following_count', 'tweet_count', 'media_count', 'likes_count', 'listed_count'];
    expect(types).to.deep.equal({
      ...Object.fromEntries(strings.map((k) => [k, 'string'])),
      verified: 'boolean',
      ...Object.fromEntries(numbers.map((k) => [k, 'number'])),
    });
    expect(output.required).to.deep.equal(['summary']);
  });

  it('sandbox hooks: sandbox-timeout fails with timeout, sandbox-malformed breaks the schema, unknown operations fail', async () => {
    const profile = socialOperation('net1_profile')!;
    const failure = await read(profile, { username: 'sandbox-timeout' }).catch((error: unknown) => error);
    expect(failure).to.be.instanceOf(ReadFailure).with.property('kind', 'timeout');
    const malformed = await read(profile, { username: 'sandbox-malformed' });
    expect(profile.output.safeParse(malformed.result).success).to.equal(false);
    const search = socialOperation('net2_search')!;
    expect(await read(search, { query: 'sandbox-timeout', limit: 5 }).catch((error: unknown) => (error as ReadFailure).kind)).to.equal('timeout');
    const unknown = await sandbox.read('net9_profile', {}, { signal: new AbortController().signal, maxPages: 1 }).catch((error: unknown) => error);
    expect(unknown).to.be.instanceOf(ReadFailure).with.property('kind', 'failed');
    const aborted = AbortSignal.abort(new Error('stop'));
    expect(await sandbox.read('net1_profile', { username: 'ada' }, { signal: aborted, maxPages: 1 }).catch((error: Error) => error.message)).to.equal('stop');
  });

  it('sandbox never returns more than maxPages pages of items, and refuses foreign cursors', async () => {
    const posts = socialOperation('net1_user_posts')!;
    const answer = await read(posts, { username: 'ada', count: 100 }, 2);
    expect(answer.pages).to.equal(2);
    expect((answer.result as { items: unknown[] }).items).to.have.length(24);
    const foreign = await read(posts, { username: 'ada', count: 5, cursor: 'abc' }).catch((error: unknown) => error);
    expect(foreign).to.be.instanceOf(ReadFailure).with.property('kind', 'refused');
  });
});
