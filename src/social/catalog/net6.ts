/** net6: the professional network (LinkedIn-like). */
import { z } from '../../core/zod.ts';
import { eitherOf, list, lookup, SEARCH_PRICE } from './define.ts';
import { company, count, cursor, limit, listOf, oneOf, person, post, postRef, query, username } from './shapes.ts';

const slug = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[^\s/]+$/, 'must be the name in the company page URL, without slashes')
  .describe('The company name as it appears in its page URL (/company/<slug>), e.g. "acme".');
const member = username.describe('The public profile name in the profile URL (/in/<username>), e.g. "ada-lovelace".');

export const net6 = [
  lookup({
    name: 'net6_profile',
    network: 'net6',
    description: "Look up a person's public net6 profile: headline, location, about text, followers and connections.",
    input: z.strictObject({ username: member }),
    output: oneOf(person.extend({ about: z.string().optional() })),
  }),
  lookup({
    name: 'net6_company',
    network: 'net6',
    description: 'Look up a company page on net6: industry, size, headquarters, website and followers.',
    input: z.strictObject({ slug }),
    output: oneOf(company),
  }),
  list({
    name: 'net6_user_posts',
    network: 'net6',
    description: "A person's recent net6 posts and reposts, newest first.",
    input: z.strictObject({ username: member, count, cursor }),
    output: listOf(post),
    pageSize: 10,
    sizeField: 'count',
  }),
  list({
    name: 'net6_company_posts',
    network: 'net6',
    description: "A company page's recent net6 posts, newest first.",
    input: z.strictObject({ slug, count, cursor }),
    output: listOf(post),
    pageSize: 10,
    sizeField: 'count',
  }),
  lookup({
    name: 'net6_post',
    network: 'net6',
    description: 'One net6 post by id or URL: text, media, author and reaction, comment and repost counts.',
    input: eitherOf({ ...postRef }, ['post_id', 'url']),
    output: oneOf(post),
  }),
  list({
    name: 'net6_search_people',
    network: 'net6',
    description: 'Search net6 members by name, role or company words, optionally in one location.',
    input: z.strictObject({
      query,
      location: z.string().min(1).max(200).optional().describe('A city, region or country to narrow the search, e.g. "Berlin".'),
      limit,
      cursor,
    }),
    output: listOf(person),
    price: SEARCH_PRICE,
    pageSize: 10,
    sizeField: 'limit',
  }),
  list({
    name: 'net6_search_posts',
    network: 'net6',
    description: 'Search public net6 posts by keywords, by relevance or newest first.',
    input: z.strictObject({
      query,
      sort: z.enum(['relevance', 'latest']).default('relevance').describe('"relevance" (the default) or "latest".'),
      limit,
      cursor,
    }),
    output: listOf(post),
    price: SEARCH_PRICE,
    pageSize: 10,
    sizeField: 'limit',
  }),
] as const;
