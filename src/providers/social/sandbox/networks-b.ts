/** Sandbox answers for net4 (video), net5 (pages and groups), net6 (professional), net7 (forums) and resolve_mention. */
import { channel, comment, company, group, page, person, playlist, post, siteOf, video } from './entities.ts';
import { int, type Random } from './random.ts';
import { countOf, type Input, list, one, postIdOf, type Spec, subjectRandom } from './spec.ts';

const channelOf = (input: Input, network: string) => {
  const key = String(input.handle ?? input.channel_id ?? 'unknown');
  const made = channel(subjectRandom(network, key), network, typeof input.handle === 'string' ? input.handle : undefined);
  return typeof input.channel_id === 'string' ? { ...made, id: input.channel_id } : made;
};

const pageOf = (input: Input, network: string) => {
  const key = String(input.username ?? input.page_id ?? 'unknown');
  const made = page(subjectRandom(network, key), network, typeof input.username === 'string' ? input.username : undefined);
  return typeof input.page_id === 'string' ? { ...made, id: input.page_id } : made;
};

const postSpec = one(
  (rng, input, network) => {
    const id = postIdOf(input);
    return { ...post(rng, network, 0), id, url: `${siteOf(network)}/p/${id}` };
  },
  (result) => `Sandbox data: post ${result.id} has ${countOf(result.like_count, 'likes')}`,
);

const posts = (pageSize: number, sizeField: 'count' | 'limit' = 'count', community?: (input: Input) => string) =>
  list('posts', pageSize, (rng: Random, input, network, index) => ({ ...post(rng, network, index), ...(community && { community: community(input) }) }), {
    sizeField,
  });
const comments = (pageSize: number) => list('comments', pageSize, (rng, _input, network, index) => comment(rng, network, index));

/** Candidate accounts for a mention: a handle, an @handle or a profile URL. */
function candidates(rng: Random, input: Input) {
  const text = String(input.mention ?? '').trim();
  const handle = (/^https?:\/\//.test(text) ? (new URL(text).pathname.split('/').filter(Boolean).pop() ?? text) : text).replace(/^@/, '');
  // A profile link names its network by host; otherwise guess the three largest networks.
  const host = /^https?:\/\/(?:www\.)?(net[1-7])\./.exec(text)?.[1];
  const networks = typeof input.network === 'string' ? [input.network] : host ? [host] : ['net1', 'net2', 'net3'];
  return networks.map((network, index) => ({
    network,
    username: handle,
    name: handle,
    url: `${siteOf(network)}/${handle}`,
    followers_count: int(rng, 0, 1_000_000),
    confidence: Math.round((0.95 - index * 0.2) * 100) / 100,
  }));
}

export const networkB: Record<string, Spec> = {
  net4_channel: one(
    (_rng, input, network) => channelOf(input, network),
    (result) => `Sandbox data: channel @${result.handle} has ${countOf(result.subscriber_count, 'subscribers')}`,
  ),
  net4_channel_videos: list('videos', 30, (rng, input, network, index) => video(rng, network, index, channelOf(input, network))),
  net4_channel_playlists: list('playlists', 30, (rng, _input, network, index) => playlist(rng, network, index), { total: [5, 60] }),
  net4_channel_shorts: list('shorts', 30, (rng, input, network, index) => video(rng, network, index, channelOf(input, network), true)),
  net4_video: one(
    (rng, input, network) => {
      const id = postIdOf(input);
      return { ...video(rng, network, 0), id, url: `${siteOf(network)}/watch/${id}` };
    },
    (result) => `Sandbox data: video ${result.id} has ${countOf(result.view_count, 'views')}`,
  ),
  net4_search: list('videos', 20, (rng, _input, network, index) => video(rng, network, index), { sizeField: 'limit' }),
  net4_trending: list('videos', 50, (rng, _input, network, index) => video(rng, network, index), { total: [50, 200] }),

  net5_page: one(
    (_rng, input, network) => pageOf(input, network),
    (result) => `Sandbox data: page ${result.name} has ${countOf(result.followers_count, 'followers')}`,
  ),
  net5_page_posts: posts(10),
  net5_page_reels: list('reels', 10, (rng, _input, network, index) => ({ ...post(rng, network, index), media: [] })),
  net5_post: postSpec,
  net5_post_comments: comments(20),
  net5_group: one(
    (rng, input, network) => group(rng, network, typeof input.group_id === 'string' ? input.group_id : undefined),
    (result) => `Sandbox data: group ${result.name} has ${countOf(result.member_count, 'members')}`,
  ),
  net5_group_posts: posts(10, 'count', (input) => String(input.group_id ?? input.url)),
  net5_search: posts(10, 'limit'),

  net6_profile: one(
    (rng, input, network) => ({ ...person(rng, network, String(input.username)), about: 'A sandbox professional profile.' }),
    (result) => `Sandbox data: ${result.name} (${result.headline}) has ${countOf(result.connections_count, 'connections')}`,
  ),
  net6_company: one(
    (rng, input, network) => company(rng, network, String(input.slug)),
    (result) => `Sandbox data: ${result.name} has ${countOf(result.followers_count, 'followers')}`,
  ),
  net6_user_posts: posts(10),
  net6_company_posts: posts(10, 'count', (input) => String(input.slug)),
  net6_post: postSpec,
  net6_search_people: list('people', 10, (rng, _input, network) => person(rng, network), { sizeField: 'limit' }),
  net6_search_posts: posts(10, 'limit'),

  net7_search: posts(25, 'limit', (input) => `r/${input.subreddit ?? 'all'}`),
  net7_subreddit_posts: posts(25, 'count', (input) => `r/${input.subreddit}`),
  net7_post: postSpec,
  net7_post_comments: comments(50),

  resolve_mention: one(
    (rng, input) => ({ candidates: candidates(rng, input) }),
    (result, input) => `Sandbox data: ${countOf((result.candidates as unknown[]).length, 'candidate accounts')} for ${input.mention}`,
  ),
};
