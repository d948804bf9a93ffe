/** net7: the community-forum network (Reddit-like). */
import { z } from '../../core/zod.ts';
import { eitherOf, list, lookup, SEARCH_PRICE } from './define.ts';
import { comment, count, cursor, limit, listOf, oneOf, post, postRef, query } from './shapes.ts';

const subreddit = z
  .string()
  .min(1)
  .max(100)
  .regex(/^[A-Za-z0-9_]+$/, 'must be the community name without the "r/" prefix')
  .describe('The community name without the "r/" prefix, e.g. "coffee".');
const period = z.enum(['hour', 'day', 'week', 'month', 'year', 'all']).default('week').describe('For "top": the period to rank over (default "week").');

export const net7 = [
  list({
    name: 'net7_search',
    network: 'net7',
    description: 'Search net7 posts by keywords, across all communities or within one.',
    input: z.strictObject({
      query,
      subreddit: subreddit.optional().describe('Only this community (name without "r/"); omit to search all.'),
      sort: z.enum(['relevance', 'new', 'top']).default('relevance').describe('"relevance" (the default), "new" or "top".'),
      limit,
      cursor,
    }),
    output: listOf(post),
    price: SEARCH_PRICE,
    pageSize: 25,
    sizeField: 'limit',
  }),
  list({
    name: 'net7_subreddit_posts',
    network: 'net7',
    description: "A net7 community's posts: hot, newest, rising or top over a period.",
    input: z.strictObject({
      subreddit,
      sort: z.enum(['hot', 'new', 'rising', 'top']).default('hot').describe('"hot" (the default), "new", "rising" or "top".'),
      period,
      count,
      cursor,
    }),
    output: listOf(post),
    pageSize: 25,
    sizeField: 'count',
  }),
  lookup({
    name: 'net7_post',
    network: 'net7',
    description: 'One net7 post by id or URL: title, text, community, score and comment count.',
    input: eitherOf({ ...postRef }, ['post_id', 'url']),
    output: oneOf(post),
  }),
  list({
    name: 'net7_post_comments',
    network: 'net7',
    description: 'Comments on a net7 post (by id or URL), flattened with parent ids so threads can be rebuilt.',
    input: eitherOf(
      {
        ...postRef,
        sort: z.enum(['best', 'top', 'new']).default('best').describe('"best" (the default), "top" or "new".'),
        count,
        cursor,
      },
      ['post_id', 'url'],
    ),
    output: listOf(comment),
    pageSize: 50,
    sizeField: 'count',
  }),
] as const;
