/** How the sandbox answers one operation: a single object, or a paged list of generated items. */
import { formatCount, int, type Random, random, seedOf } from './random.ts';

export type Input = Record<string, unknown>;

export interface OneSpec {
  kind: 'one';
  /** Upstream pages this answer stands for (a scan of several lists); 1 when unset. */
  pages?: number;
  make(rng: Random, input: Input, network: string): Record<string, unknown>;
  summary(result: Record<string, unknown>, input: Input): string;
}

export interface ListSpec {
  kind: 'list';
  /** Items per upstream page; the sandbox bills pages as the real service would. */
  pageSize: number;
  /** The input field bounding how many items to return; lists without one return one whole page. */
  sizeField?: 'count' | 'limit';
  noun: string;
  /** How many items exist in all (drawn once per subject), so paging ends somewhere. */
  total: [number, number];
  item(rng: Random, input: Input, network: string, index: number): unknown;
}

export type Spec = OneSpec | ListSpec;

export const one = (make: OneSpec['make'], summary: OneSpec['summary'], pages?: number): OneSpec => ({
  kind: 'one',
  make,
  summary,
  ...(pages !== undefined && { pages }),
});

export const list = (noun: string, pageSize: number, item: ListSpec['item'], options: Partial<Pick<ListSpec, 'sizeField' | 'total'>> = {}): ListSpec => ({
  kind: 'list',
  noun,
  pageSize,
  sizeField: 'sizeField' in options ? options.sizeField : 'count',
  total: options.total ?? [40, 400],
  item,
});

/** Lists without paging upstream (stories, highlights, trends): one page, no size field. */
export const whole = (noun: string, item: ListSpec['item'], total: [number, number] = [3, 15]): ListSpec =>
  list(noun, total[1], item, { sizeField: undefined, total });

/** The same author/channel/page for every item of a subject (all posts of @ada are by the same @ada). */
export const subjectRandom = (network: string, subject: string): Random => random(seedOf('subject', network, subject));

/** The id a post input names: `post_id`, else the last path segment of `url`. */
export function postIdOf(input: Input): string {
  if (typeof input.post_id === 'string') return input.post_id;
  if (typeof input.video_id === 'string') return input.video_id;
  const url = typeof input.url === 'string' ? new URL(input.url) : undefined;
  return url?.pathname.split('/').filter(Boolean).pop() ?? 'unknown';
}

/** Who or what the read was about, for the summary line. */
export function subjectOf(input: Input): string {
  for (const [key, prefix] of [
    ['username', '@'],
    ['handle', '@'],
    ['slug', ''],
    ['subreddit', 'r/'],
    ['hashtag', '#'],
    ['channel_id', ''],
    ['page_id', ''],
    ['group_id', ''],
    ['highlight_id', ''],
    ['music_id', 'sound '],
  ] as const) {
    if (typeof input[key] === 'string') return `${prefix}${input[key]}`;
  }
  if (typeof input.query === 'string') return `"${input.query}"`;
  if (typeof input.post_id === 'string' || typeof input.url === 'string' || typeof input.video_id === 'string') return `post ${postIdOf(input)}`;
  if (typeof input.region === 'string') return `region ${input.region}`;
  return 'the request';
}

export const countOf = (value: unknown, noun: string): string => `${formatCount(typeof value === 'number' ? value : 0)} ${noun}`;
export const drawTotal = (rng: Random, [min, max]: [number, number]): number => int(rng, min, max);
