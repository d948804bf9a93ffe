/** Sandbox answers for net1 (photo-sharing), net2 (microblog) and net3 (short video), by operation name. */
import { comment, highlight, post, profile, siteOf, story, trend, user } from './entities.ts';
import { dateBefore, formatCount, int, pick, skewed, token } from './random.ts';
import { countOf, type Input, list, one, postIdOf, type Spec, subjectRandom, whole } from './spec.ts';

const handleOf = (input: Input) => String(input.username ?? input.hashtag ?? 'unknown');

const profileSpec = one(
  (rng, input, network) => profile(rng, network, handleOf(input)),
  (result) => `Sandbox data: @${result.username} has ${countOf(result.followers_count, 'followers')}`,
);

/** Posts of one account: the same author on every item. */
const userPosts = (noun: string, pageSize: number) =>
  list(noun, pageSize, (rng, input, network, index) => post(rng, network, index, user(subjectRandom(network, handleOf(input)), network, handleOf(input))));

const postSpec = one(
  (rng, input, network) => {
    const id = postIdOf(input);
    return { ...post(rng, network, 0), id, url: `${siteOf(network)}/p/${id}` };
  },
  (result) => `Sandbox data: post ${result.id} has ${countOf(result.like_count, 'likes')}`,
);

const comments = (pageSize: number) => list('comments', pageSize, (rng, _input, network, index) => comment(rng, network, index));
const posts = (pageSize: number, sizeField: 'count' | 'limit' = 'count') =>
  list('posts', pageSize, (rng, _input, network, index) => post(rng, network, index), { sizeField });

export const networkA: Record<string, Spec> = {
  net1_profile: profileSpec,
  net1_user_posts: userPosts('posts', 12),
  net1_user_reels: list('reels', 12, (rng, input, network, index) => ({
    ...post(rng, network, index, user(subjectRandom(network, handleOf(input)), network, handleOf(input))),
    media: [{ type: 'video' as const, url: `${siteOf(network)}/reel/${token(rng, 12)}.mp4`, width: 1080, height: 1920, duration_seconds: int(rng, 5, 90) }],
  })),
  net1_user_stories: whole('stories', (rng, _input, network, index) => story(rng, network, index), [0, 12]),
  net1_user_highlights: whole('highlights', (rng, _input, network) => highlight(rng, network), [1, 20]),
  net1_highlight_stories: whole('stories', (rng, _input, network, index) => story(rng, network, index * 24), [1, 40]),
  net1_post: postSpec,
  net1_post_comments: comments(20),

  net2_search: posts(20, 'limit'),
  // Exactly spec §2.10: these names and types, nothing else.
  net2_profile: one(
    (rng, input, network) => {
      const handle = handleOf(input);
      const base = user(rng, network, handle);
      return {
        id: String(int(rng, 10_000_000, 1_999_999_999)),
        username: handle,
        name: base.name,
        url: `${siteOf(network)}/${handle}`,
        description: `Posts about ${pick(rng, ['coffee', 'design', 'robots', 'running'])}. Sandbox account.`,
        location: pick(rng, ['Berlin', 'Lisbon', 'Toronto', 'Seoul']),
        created_at: dateBefore(int(rng, 5_000, 120_000)),
        profile_image_url: base.profile_image_url,
        verified: base.verified,
        followers_count: base.followers_count,
        following_count: skewed(rng, 5_000),
        tweet_count: skewed(rng, 80_000),
        media_count: skewed(rng, 5_000),
        likes_count: skewed(rng, 100_000),
        listed_count: skewed(rng, 2_000),
      };
    },
    (result) => `Sandbox data: @${result.username} has ${countOf(result.followers_count, 'followers')}`,
  ),
  net2_user_posts: userPosts('posts', 20),
  net2_post: postSpec,
  net2_post_comments: comments(20),
  net2_user_connections: list('accounts', 50, (rng, _input, network) => user(rng, network)),
  net2_tweet_engagers: list('accounts', 50, (rng, _input, network) => user(rng, network), { total: [5, 300] }),
  net2_trends: whole('trends', (rng, _input, network, index) => trend(rng, network, index), [10, 30]),

  net3_profile: profileSpec,
  net3_user_posts: userPosts('videos', 30),
  net3_post: postSpec,
  net3_post_comments: comments(20),
  net3_search: posts(20, 'limit'),
  net3_hashtag_posts: posts(30),
  net3_music_posts: posts(30),
  net3_trending: list('videos', 20, (rng, _input, network, index) => post(rng, network, index), { total: [50, 100] }),
  net3_trend_scan: one(
    (rng, input, network) => ({
      region: input.region ?? 'global',
      hashtags: Array.from({ length: 10 }, (_, index) => trend(rng, network, index)),
      sounds: Array.from({ length: 10 }, (_, index) => trend(rng, network, index, '♪ ')),
      creators: Array.from({ length: 10 }, (_, index) => trend(rng, network, index, '@')),
    }),
    (result) => `Sandbox data: ${formatCount(10)} trending hashtags, sounds and creators in ${result.region}`,
    3,
  ),
};
