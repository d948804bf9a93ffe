/** net3: the short-video network (TikTok-like). */
import { z } from '../../core/zod.ts';
import { eitherOf, list, lookup, SEARCH_PRICE } from './define.ts';
import { comment, count, cursor, id, limit, listOf, oneOf, post, postRef, profile, query, region, summary, trend, username } from './shapes.ts';

const videos = (input: z.ZodObject, name: string, description: string, pageSize = 30) =>
  list({ name, network: 'net3', description, input, output: listOf(post), pageSize, sizeField: 'count' });

export const net3 = [
  lookup({
    name: 'net3_profile',
    network: 'net3',
    description: 'Look up a net3 creator by handle: bio, followers, following, video count and verification.',
    input: z.strictObject({ username }),
    output: oneOf(profile),
  }),
  videos(z.strictObject({ username, count, cursor }), 'net3_user_posts', "A creator's net3 videos, newest first, with views, likes, comments and shares."),
  lookup({
    name: 'net3_post',
    network: 'net3',
    description: 'One net3 video by id or URL: caption, hashtags, media and engagement counts.',
    input: eitherOf({ ...postRef }, ['post_id', 'url']),
    output: oneOf(post),
  }),
  list({
    name: 'net3_post_comments',
    network: 'net3',
    description: 'Comments on a net3 video (by id or URL), most liked first.',
    input: eitherOf({ ...postRef, count, cursor }, ['post_id', 'url']),
    output: listOf(comment),
    pageSize: 20,
    sizeField: 'count',
  }),
  list({
    name: 'net3_search',
    network: 'net3',
    description: 'Search net3 videos by keywords, ranked by relevance.',
    input: z.strictObject({ query, limit, cursor }),
    output: listOf(post),
    price: SEARCH_PRICE,
    pageSize: 20,
    sizeField: 'limit',
  }),
  videos(
    z.strictObject({
      hashtag: z
        .string()
        .min(1)
        .max(100)
        .regex(/^[^#\s]+$/, 'must be the hashtag without the leading # and without spaces')
        .describe('The hashtag without the leading #, e.g. "coffee".'),
      count,
      cursor,
    }),
    'net3_hashtag_posts',
    'Popular net3 videos that carry one hashtag.',
  ),
  videos(z.strictObject({ music_id: id('sound (music)'), count, cursor }), 'net3_music_posts', 'net3 videos that use one sound (music id from a video).'),
  list({
    name: 'net3_trending',
    network: 'net3',
    description: 'The videos trending on net3 now, worldwide or in one country.',
    input: z.strictObject({ region, count, cursor }),
    output: listOf(post),
    pageSize: 20,
    sizeField: 'count',
  }),
  list({
    name: 'net3_trend_scan',
    network: 'net3',
    description: 'A snapshot of what is rising on net3 in a country: the top hashtags, sounds and creators (ten each).',
    input: z.strictObject({ region }),
    output: z.object({
      summary,
      region: z.string(),
      hashtags: z.array(trend),
      sounds: z.array(trend),
      creators: z.array(trend),
    }),
    // Three upstream lists (hashtags, sounds, creators), one page each.
    pages: 3,
  }),
] as const;
