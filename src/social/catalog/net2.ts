/** net2: the microblog network (X/Twitter-like). */
import { z } from '../../core/zod.ts';
import { eitherOf, list, lookup, SEARCH_PRICE } from './define.ts';
import { comment, count, cursor, limit, listOf, oneOf, post, postRef, query, region, summary, trend, user, username } from './shapes.ts';

/** Spec §2.10, field for field: every field optional except `summary`. */
export const net2Profile = z.object({
  summary,
  id: z.string().optional(),
  username: z.string().optional(),
  name: z.string().optional(),
  url: z.string().optional(),
  description: z.string().optional(),
  location: z.string().optional(),
  created_at: z.string().optional(),
  profile_image_url: z.string().optional(),
  verified: z.boolean().optional(),
  followers_count: z.number().optional(),
  following_count: z.number().optional(),
  tweet_count: z.number().optional(),
  media_count: z.number().optional(),
  likes_count: z.number().optional(),
  listed_count: z.number().optional(),
});

export const net2 = [
  list({
    name: 'net2_search',
    network: 'net2',
    description: 'Search recent public net2 posts by words, hashtags or @mentions; "top" ranks by engagement, "latest" by time.',
    input: z.strictObject({
      query,
      sort: z.enum(['top', 'latest']).default('top').describe('"top" (most engagement, the default) or "latest" (newest first).'),
      limit,
      cursor,
    }),
    output: listOf(post),
    price: SEARCH_PRICE,
    pageSize: 20,
    sizeField: 'limit',
  }),
  lookup({
    name: 'net2_profile',
    network: 'net2',
    description: 'Look up a profile by handle.',
    input: z.strictObject({ username }),
    output: net2Profile,
  }),
  list({
    name: 'net2_user_posts',
    network: 'net2',
    description: "An account's net2 posts, newest first, with engagement counts; replies only when asked for.",
    input: z.strictObject({
      username,
      include_replies: z.boolean().default(false).describe('Also return the replies the account wrote (default false).'),
      count,
      cursor,
    }),
    output: listOf(post),
    pageSize: 20,
    sizeField: 'count',
  }),
  lookup({
    name: 'net2_post',
    network: 'net2',
    description: 'One net2 post by id or URL: text, media, author and like, repost, reply and view counts.',
    input: eitherOf({ ...postRef }, ['post_id', 'url']),
    output: oneOf(post),
  }),
  list({
    name: 'net2_post_comments',
    network: 'net2',
    description: 'Replies to a net2 post (by id or URL), most relevant first.',
    input: eitherOf({ ...postRef, count, cursor }, ['post_id', 'url']),
    output: listOf(comment),
    pageSize: 20,
    sizeField: 'count',
  }),
  list({
    name: 'net2_user_connections',
    network: 'net2',
    description: 'The accounts that follow a net2 account, or that it follows.',
    input: z.strictObject({
      username,
      direction: z.enum(['followers', 'following']).default('followers').describe('"followers" (the default) or "following".'),
      count,
      cursor,
    }),
    output: listOf(user),
    pageSize: 50,
    sizeField: 'count',
  }),
  list({
    name: 'net2_tweet_engagers',
    network: 'net2',
    description: 'The accounts that liked, reposted or quoted a net2 post (by id or URL).',
    input: eitherOf(
      {
        ...postRef,
        type: z.enum(['likers', 'reposters', 'quoters']).default('likers').describe('Which engagement: "likers" (the default), "reposters" or "quoters".'),
        count,
        cursor,
      },
      ['post_id', 'url'],
    ),
    output: listOf(user),
    pageSize: 50,
    sizeField: 'count',
  }),
  list({
    name: 'net2_trends',
    network: 'net2',
    description: 'The topics trending on net2 now, worldwide or in one country, ranked.',
    input: z.strictObject({ region }),
    output: listOf(trend),
  }),
] as const;
