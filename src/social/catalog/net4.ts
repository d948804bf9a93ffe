/** net4: the long-form video network (YouTube-like). */
import { z } from '../../core/zod.ts';
import { eitherOf, list, lookup, SEARCH_PRICE } from './define.ts';
import { channel, count, cursor, id, limit, link, listOf, oneOf, playlist, query, region, video } from './shapes.ts';

/** A channel by its @handle or its id; both appear in channel URLs. */
const channelRef = {
  handle: z
    .string()
    .min(1)
    .max(100)
    .regex(/^[^@\s/][^\s/]*$/, 'must be the handle without the leading at-sign')
    .optional()
    .describe('The channel handle without the leading at-sign (give this or channel_id).'),
  channel_id: id('channel').optional().describe('The channel id, e.g. "UC…" (give this or handle).'),
};
const channelKeys = ['handle', 'channel_id'] as const;

const ofChannel = (name: string, description: string, item: z.ZodObject, extra: z.ZodRawShape = {}) =>
  list({
    name,
    network: 'net4',
    description,
    input: eitherOf({ ...channelRef, ...extra, count, cursor }, channelKeys),
    output: listOf(item),
    pageSize: 30,
    sizeField: 'count',
  });

export const net4 = [
  lookup({
    name: 'net4_channel',
    network: 'net4',
    description: 'Look up a net4 channel by handle or id: description, subscribers, video and view totals.',
    input: eitherOf({ ...channelRef }, channelKeys),
    output: oneOf(channel),
  }),
  ofChannel('net4_channel_videos', "A net4 channel's long-form videos, newest or most popular first.", video, {
    sort: z.enum(['latest', 'popular']).default('latest').describe('"latest" (the default) or "popular".'),
  }),
  ofChannel('net4_channel_playlists', "A net4 channel's public playlists.", playlist),
  ofChannel('net4_channel_shorts', "A net4 channel's shorts (vertical videos under a minute), newest first.", video),
  lookup({
    name: 'net4_video',
    network: 'net4',
    description: 'One net4 video by id or URL: title, description, duration, channel and view, like and comment counts.',
    input: eitherOf({ video_id: id('video').optional().describe('The video id (give this or url).'), url: link('video').optional() }, ['video_id', 'url']),
    output: oneOf(video),
  }),
  list({
    name: 'net4_search',
    network: 'net4',
    description: 'Search net4 videos by keywords, ranked by relevance.',
    input: z.strictObject({ query, limit, cursor }),
    output: listOf(video),
    price: SEARCH_PRICE,
    pageSize: 20,
    sizeField: 'limit',
  }),
  list({
    name: 'net4_trending',
    network: 'net4',
    description: 'The videos trending on net4 now in a country, optionally in one category.',
    input: z.strictObject({
      region,
      category: z.enum(['now', 'music', 'gaming', 'movies']).default('now').describe('"now" (all, the default), "music", "gaming" or "movies".'),
      count,
      cursor,
    }),
    output: listOf(video),
    pageSize: 50,
    sizeField: 'count',
  }),
] as const;
