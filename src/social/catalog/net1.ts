/** net1: the photo-and-reel network (Instagram-like). */
import { z } from '../../core/zod.ts';
import { eitherOf, list, lookup } from './define.ts';
import { comment, count, cursor, highlight, id, listOf, oneOf, post, postRef, profile, story, username } from './shapes.ts';

const account = z.strictObject({ username });
const posts = z.strictObject({ username, count, cursor });

export const net1 = [
  lookup({
    name: 'net1_profile',
    network: 'net1',
    description: 'Look up a net1 account by handle: bio, follower and following counts, post count, verification.',
    input: account,
    output: oneOf(profile),
  }),
  list({
    name: 'net1_user_posts',
    network: 'net1',
    description: "An account's feed posts on net1, newest first, with captions, media and engagement counts.",
    input: posts,
    output: listOf(post),
    pageSize: 12,
    sizeField: 'count',
  }),
  list({
    name: 'net1_user_reels',
    network: 'net1',
    description: "An account's short videos (reels) on net1, newest first, with view and like counts.",
    input: posts,
    output: listOf(post),
    pageSize: 12,
    sizeField: 'count',
  }),
  list({
    name: 'net1_user_stories',
    network: 'net1',
    description: 'The stories a net1 account has live now (they expire after 24 hours); empty when there are none.',
    input: account,
    output: listOf(story),
  }),
  list({
    name: 'net1_user_highlights',
    network: 'net1',
    description: "The story highlights pinned to a net1 profile; use a highlight's id with net1_highlight_stories.",
    input: account,
    output: listOf(highlight),
  }),
  list({
    name: 'net1_highlight_stories',
    network: 'net1',
    description: 'The stories saved in one net1 highlight (an id from net1_user_highlights).',
    input: z.strictObject({ highlight_id: id('highlight') }),
    output: listOf(story),
  }),
  lookup({
    name: 'net1_post',
    network: 'net1',
    description: 'One net1 post or reel by id or URL: caption, media, author and engagement counts.',
    input: eitherOf({ ...postRef }, ['post_id', 'url']),
    output: oneOf(post),
  }),
  list({
    name: 'net1_post_comments',
    network: 'net1',
    description: 'Comments on a net1 post or reel (by id or URL), most relevant first.',
    input: eitherOf({ ...postRef, count, cursor }, ['post_id', 'url']),
    output: listOf(comment),
    pageSize: 20,
    sizeField: 'count',
  }),
] as const;
