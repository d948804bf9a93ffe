/**
 * Zod building blocks shared by the social catalog (spec §4.4): the fields agents pass in
 * (handles, ids, paging) and the entities that come back. Output objects are not strict, so a
 * provider that adds a field does not break validation (unknown keys are dropped).
 */
import { HTTP_URL_PATTERN, z } from '../../core/zod.ts';

// ---------------------------------------------------------------- input fields

/** A handle as the network shows it, minus the at-sign: a leading @ is the commonest agent mistake, so it is refused with a hint. */
export const username = z
  .string()
  .min(1)
  .max(100)
  .regex(/^[^@\s/][^\s/]*$/, 'must be the handle without the leading at-sign, spaces or slashes')
  .describe('The handle without the leading at-sign, e.g. "ada" for @ada.');

export const id = (what: string) => z.string().min(1).max(200).describe(`The ${what} id as the network shows it.`);

/** Only http(s) links: a `javascript:` or `file:` URL is never a post. */
export const link = (what: string) =>
  z
    .url({ protocol: /^https?$/ })
    .max(2000)
    .openapi({ pattern: HTTP_URL_PATTERN })
    .describe(`The ${what} URL as copied from a browser.`);

export const query = z.string().min(1).max(500).describe('What to search for, in plain words as a person would type them.');

/** Items a list returns when the input does not say (also what the quote assumes for an unparsed input). */
export const DEFAULT_COUNT = 20;
export const count = z.int().min(1).max(100).default(DEFAULT_COUNT).describe('How many items to return (1–100, default 20).');
export const limit = z.int().min(1).max(100).default(DEFAULT_COUNT).describe('How many results to return (1–100, default 20).');

export const cursor = z
  .string()
  .min(1)
  .max(2000)
  .optional()
  .describe('The `next_cursor` of the previous answer, to continue where it stopped; omit for the first page.');

export const region = z
  .string()
  .regex(/^(?:[A-Z]{2}|global)$/, 'must be an ISO 3166-1 alpha-2 code in capitals (e.g. "US") or "global"')
  .default('global')
  .describe('ISO 3166-1 alpha-2 country code in capitals (e.g. "US", "DE"), or "global" (the default).');

/** Inputs that name one post: by id or by URL, exactly one (the refinement of `postInput`). */
export const postRef = {
  post_id: id('post').optional().describe('The post id as the network shows it (give this or url).'),
  url: link('post').optional().describe('The post URL as copied from a browser (give this or post_id).'),
};

// ---------------------------------------------------------------- output entities

const when = z.string().describe('ISO 8601 date-time.');
const counter = z.number().int().min(0);

export const user = z.object({
  id: z.string(),
  username: z.string(),
  name: z.string().optional(),
  url: z.string().optional(),
  verified: z.boolean().optional(),
  followers_count: counter.optional(),
  profile_image_url: z.string().optional(),
});

export const profile = user.extend({
  description: z.string().optional(),
  following_count: counter.optional(),
  posts_count: counter.optional(),
  is_private: z.boolean().optional(),
  external_url: z.string().optional(),
});

export const media = z.object({
  type: z.enum(['image', 'video', 'audio']),
  url: z.string(),
  width: counter.optional(),
  height: counter.optional(),
  duration_seconds: z.number().min(0).optional(),
});

export const post = z.object({
  id: z.string(),
  url: z.string(),
  text: z.string(),
  created_at: when,
  author: user,
  title: z.string().optional(),
  like_count: counter.optional(),
  comment_count: counter.optional(),
  share_count: counter.optional(),
  view_count: counter.optional(),
  hashtags: z.array(z.string()).optional(),
  media: z.array(media),
  /** Where the post lives when the network groups posts (a subreddit, a group, a company page). */
  community: z.string().optional(),
});

export const comment = z.object({
  id: z.string(),
  text: z.string(),
  created_at: when,
  author: user,
  like_count: counter.optional(),
  reply_count: counter.optional(),
  parent_id: z.string().nullable().describe('The comment this one answers, or null for a top-level comment.'),
});

export const story = z.object({ id: z.string(), created_at: when, expires_at: when.optional(), media });

export const highlight = z.object({ id: z.string(), title: z.string(), cover_image_url: z.string().optional(), story_count: counter });

export const channel = z.object({
  id: z.string(),
  handle: z.string(),
  name: z.string(),
  url: z.string(),
  description: z.string().optional(),
  subscriber_count: counter.optional(),
  video_count: counter.optional(),
  view_count: counter.optional(),
  created_at: when.optional(),
});

export const video = z.object({
  id: z.string(),
  url: z.string(),
  title: z.string(),
  description: z.string().optional(),
  published_at: when,
  duration_seconds: z.number().min(0),
  view_count: counter.optional(),
  like_count: counter.optional(),
  comment_count: counter.optional(),
  thumbnail_url: z.string().optional(),
  channel: z.object({ id: z.string(), name: z.string() }),
});

export const playlist = z.object({ id: z.string(), url: z.string(), title: z.string(), video_count: counter, published_at: when.optional() });

export const page = z.object({
  id: z.string(),
  name: z.string(),
  username: z.string().optional(),
  url: z.string(),
  category: z.string().optional(),
  description: z.string().optional(),
  followers_count: counter.optional(),
  likes_count: counter.optional(),
  verified: z.boolean().optional(),
});

export const group = z.object({
  id: z.string(),
  name: z.string(),
  url: z.string(),
  privacy: z.enum(['public', 'private']),
  description: z.string().optional(),
  member_count: counter.optional(),
});

export const person = z.object({
  id: z.string(),
  username: z.string(),
  name: z.string(),
  url: z.string(),
  headline: z.string().optional(),
  location: z.string().optional(),
  followers_count: counter.optional(),
  connections_count: counter.optional(),
});

export const company = z.object({
  id: z.string(),
  slug: z.string(),
  name: z.string(),
  url: z.string(),
  industry: z.string().optional(),
  description: z.string().optional(),
  website: z.string().optional(),
  headquarters: z.string().optional(),
  employee_count: counter.optional(),
  followers_count: counter.optional(),
});

export const trend = z.object({
  rank: z.number().int().min(1),
  name: z.string(),
  url: z.string().optional(),
  post_count: counter.optional(),
});

// ---------------------------------------------------------------- output envelopes

export const summary = z.string().describe('A one-line result for the reader.');

/** A list answer: the items of this call and where the next call continues (null: no more). */
export const listOf = <T extends z.ZodType>(item: T) =>
  z.object({
    summary,
    items: z.array(item),
    next_cursor: z.string().nullable().describe('Pass as `cursor` to continue; null when there is nothing more.'),
  });

/** A single-entity answer: the entity's fields at the top level, next to `summary` (as net2_profile in spec §2.10). */
export const oneOf = <T extends z.ZodObject>(entity: T) => entity.extend({ summary });
