/**
 * Plausible fake entities. They mirror the catalog's output shapes (src/social/catalog/shapes.ts)
 * without importing them, since providers sit below domains; test/social/catalog.test.ts proves
 * every operation's sandbox answer validates against its schema.
 */
import { dateBefore, int, pick, type Random, skewed, token } from './random.ts';

const FIRST = ['Ada', 'Grace', 'Alan', 'Linus', 'Margaret', 'Dennis', 'Barbara', 'Ken', 'Radia', 'Tim', 'Frances', 'Edsger'];
const LAST = ['Lovelace', 'Hopper', 'Turing', 'Hamilton', 'Ritchie', 'Liskov', 'Thompson', 'Perlman', 'Allen', 'Dijkstra'];
const TOPICS = ['coffee', 'cycling', 'design', 'gardening', 'jazz', 'photography', 'robotics', 'running', 'baking', 'travel'];
const PHRASES = ['tried something new today', 'a quick tip that saved me hours', 'behind the scenes', 'what we learned this week'];
const CITIES = ['Berlin', 'Lisbon', 'Toronto', 'Nairobi', 'Seoul', 'Austin', 'Melbourne', 'Lyon'];
const INDUSTRIES = ['Software', 'Retail', 'Healthcare', 'Logistics', 'Education', 'Energy'];

/** Views first, then likes, comments and shares as plausible fractions of them (never more likes than views). */
function engagement(rng: Random, maxViews: number) {
  const view_count = skewed(rng, maxViews);
  const like_count = Math.floor(view_count * (0.01 + rng() * 0.09));
  return { like_count, comment_count: Math.floor(like_count * rng() * 0.05), share_count: Math.floor(like_count * rng() * 0.1), view_count };
}

export const siteOf = (network: string): string => `https://${network}.example`;

export function user(rng: Random, network: string, handle?: string) {
  const name = `${pick(rng, FIRST)} ${pick(rng, LAST)}`;
  const username = handle ?? `${name.toLowerCase().replace(' ', '_')}${int(rng, 1, 99)}`;
  return {
    id: `u_${token(rng, 8)}`,
    username,
    name,
    url: `${siteOf(network)}/${username}`,
    verified: rng() < 0.2,
    followers_count: skewed(rng, 5_000_000),
    profile_image_url: `${siteOf(network)}/img/${username}.jpg`,
  };
}

export function profile(rng: Random, network: string, handle: string) {
  const topic = pick(rng, TOPICS);
  return {
    ...user(rng, network, handle),
    description: `Into ${topic} and ${pick(rng, TOPICS)}. Sandbox account.`,
    following_count: skewed(rng, 5_000),
    posts_count: skewed(rng, 20_000),
    is_private: false,
    external_url: `https://${handle}.example.org`,
  };
}

export function media(rng: Random, network: string, type: 'image' | 'video' = rng() < 0.6 ? 'image' : 'video') {
  const base = { type, url: `${siteOf(network)}/media/${token(rng, 12)}.${type === 'image' ? 'jpg' : 'mp4'}`, width: 1080, height: 1350 };
  return type === 'video' ? { ...base, duration_seconds: int(rng, 5, 90) } : base;
}

export function post(rng: Random, network: string, index: number, author = user(rng, network)) {
  const id = token(rng, 11);
  const topic = pick(rng, TOPICS);
  return {
    id,
    url: `${siteOf(network)}/p/${id}`,
    text: `${pick(rng, PHRASES)}: ${topic} #${topic}`,
    created_at: dateBefore(index * 7 + int(rng, 0, 6)),
    author,
    ...engagement(rng, 2_000_000),
    hashtags: [topic],
    media: rng() < 0.8 ? [media(rng, network)] : [],
  };
}

export function comment(rng: Random, network: string, index: number) {
  return {
    id: `c_${token(rng, 10)}`,
    text: `${pick(rng, ['Love this', 'Great point', 'Where was this?', 'Saving this for later'])} (${pick(rng, TOPICS)})`,
    created_at: dateBefore(index + int(rng, 0, 3)),
    author: user(rng, network),
    like_count: skewed(rng, 3_000),
    reply_count: skewed(rng, 40),
    parent_id: null,
  };
}

export const story = (rng: Random, network: string, index: number) => {
  const hoursAgo = index + int(rng, 0, 2);
  return { id: `s_${token(rng, 10)}`, created_at: dateBefore(hoursAgo), expires_at: dateBefore(hoursAgo - 24), media: media(rng, network) };
};

export const highlight = (rng: Random, network: string) => ({
  id: `h_${token(rng, 8)}`,
  title: pick(rng, TOPICS),
  cover_image_url: `${siteOf(network)}/img/${token(rng, 8)}.jpg`,
  story_count: int(rng, 1, 40),
});

export function channel(rng: Random, network: string, handle = `${pick(rng, TOPICS)}${pick(rng, LAST).toLowerCase()}`) {
  return {
    id: `UC${token(rng, 20)}`,
    handle,
    name: `${handle[0]!.toUpperCase()}${handle.slice(1)}`,
    url: `${siteOf(network)}/@${handle}`,
    description: `Videos about ${pick(rng, TOPICS)}.`,
    subscriber_count: skewed(rng, 10_000_000),
    video_count: skewed(rng, 3_000),
    view_count: skewed(rng, 1_000_000_000),
    created_at: dateBefore(int(rng, 10_000, 100_000)),
  };
}

export function video(rng: Random, network: string, index: number, owner = channel(rng, network), short = false) {
  const id = token(rng, 11);
  const topic = pick(rng, TOPICS);
  // Video outputs carry no share count.
  const { share_count: _shares, ...counts } = engagement(rng, 5_000_000);
  return {
    id,
    url: `${siteOf(network)}/${short ? 'shorts' : 'watch'}/${id}`,
    title: `${pick(rng, PHRASES)} (${topic})`,
    description: `A sandbox video about ${topic}.`,
    published_at: dateBefore(index * 30 + int(rng, 0, 29)),
    duration_seconds: short ? int(rng, 10, 60) : int(rng, 60, 3_600),
    ...counts,
    thumbnail_url: `${siteOf(network)}/thumb/${id}.jpg`,
    channel: { id: owner.id, name: owner.name },
  };
}

export const playlist = (rng: Random, network: string, index: number) => {
  const id = `PL${token(rng, 16)}`;
  return {
    id,
    url: `${siteOf(network)}/playlist/${id}`,
    title: `Best of ${pick(rng, TOPICS)}`,
    video_count: int(rng, 2, 200),
    published_at: dateBefore(index * 200 + 5),
  };
};

export function page(rng: Random, network: string, handle = `${pick(rng, TOPICS)}${token(rng, 3)}`) {
  return {
    id: `pg_${token(rng, 10)}`,
    name: `${handle[0]!.toUpperCase()}${handle.slice(1)}`,
    username: handle,
    url: `${siteOf(network)}/${handle}`,
    category: pick(rng, INDUSTRIES),
    description: `The sandbox page of ${handle}.`,
    followers_count: skewed(rng, 3_000_000),
    likes_count: skewed(rng, 3_000_000),
    verified: rng() < 0.3,
  };
}

export function group(rng: Random, network: string, id = `g_${token(rng, 10)}`) {
  const topic = pick(rng, TOPICS);
  return {
    id,
    name: `${topic[0]!.toUpperCase()}${topic.slice(1)} lovers of ${pick(rng, CITIES)}`,
    url: `${siteOf(network)}/groups/${id}`,
    privacy: rng() < 0.7 ? ('public' as const) : ('private' as const),
    description: `A sandbox group about ${topic}.`,
    member_count: skewed(rng, 500_000),
  };
}

export function person(rng: Random, network: string, handle?: string) {
  const base = user(rng, network, handle);
  return {
    id: base.id,
    username: base.username,
    name: base.name,
    url: `${siteOf(network)}/in/${base.username}`,
    headline: `${pick(rng, ['Engineer', 'Designer', 'Founder', 'Analyst', 'Teacher'])} at ${pick(rng, LAST)} ${pick(rng, INDUSTRIES)}`,
    location: pick(rng, CITIES),
    followers_count: base.followers_count % 50_000,
    connections_count: int(rng, 0, 500),
  };
}

export function company(rng: Random, network: string, slug = `${pick(rng, LAST).toLowerCase()}-${token(rng, 3)}`) {
  return {
    id: `co_${token(rng, 8)}`,
    slug,
    name: `${slug[0]!.toUpperCase()}${slug.slice(1)} Inc.`,
    url: `${siteOf(network)}/company/${slug}`,
    industry: pick(rng, INDUSTRIES),
    description: `A sandbox company in ${pick(rng, INDUSTRIES).toLowerCase()}.`,
    website: `https://${slug}.example.com`,
    headquarters: pick(rng, CITIES),
    employee_count: skewed(rng, 200_000),
    followers_count: skewed(rng, 2_000_000),
  };
}

export const trend = (rng: Random, network: string, index: number, prefix = '#') => {
  const name = `${prefix}${pick(rng, TOPICS)}${index > 9 ? index : ''}`;
  return { rank: index + 1, name, url: `${siteOf(network)}/search?q=${encodeURIComponent(name)}`, post_count: skewed(rng, 2_000_000) };
};
