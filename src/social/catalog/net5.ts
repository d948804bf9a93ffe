/** net5: the pages-and-groups network (Facebook-like). */
import { z } from '../../core/zod.ts';
import { eitherOf, list, lookup, SEARCH_PRICE } from './define.ts';
import { comment, count, cursor, group, id, limit, link, listOf, oneOf, page, post, postRef, query, username } from './shapes.ts';

/** A page by its vanity name or numeric id. */
const pageRef = {
  username: username.optional().describe('The page name in its URL, e.g. "acmecoffee" (give this or page_id).'),
  page_id: id('page').optional().describe('The numeric page id (give this or username).'),
};
const pageKeys = ['username', 'page_id'] as const;
const groupRef = { group_id: id('group').optional().describe('The group id (give this or url).'), url: link('group').optional() };
const groupKeys = ['group_id', 'url'] as const;

export const net5 = [
  lookup({
    name: 'net5_page',
    network: 'net5',
    description: 'Look up a net5 page (a brand, public figure or organisation) by name or id: category, followers, likes.',
    input: eitherOf({ ...pageRef }, pageKeys),
    output: oneOf(page),
  }),
  list({
    name: 'net5_page_posts',
    network: 'net5',
    description: "A net5 page's posts, newest first, with reactions, comments and shares.",
    input: eitherOf({ ...pageRef, count, cursor }, pageKeys),
    output: listOf(post),
    pageSize: 10,
    sizeField: 'count',
  }),
  list({
    name: 'net5_page_reels',
    network: 'net5',
    description: "A net5 page's short videos (reels), newest first.",
    input: eitherOf({ ...pageRef, count, cursor }, pageKeys),
    output: listOf(post),
    pageSize: 10,
    sizeField: 'count',
  }),
  lookup({
    name: 'net5_post',
    network: 'net5',
    description: 'One public net5 post by id or URL: text, media, author and reaction counts.',
    input: eitherOf({ ...postRef }, ['post_id', 'url']),
    output: oneOf(post),
  }),
  list({
    name: 'net5_post_comments',
    network: 'net5',
    description: 'Comments on a public net5 post (by id or URL), most relevant first.',
    input: eitherOf({ ...postRef, count, cursor }, ['post_id', 'url']),
    output: listOf(comment),
    pageSize: 20,
    sizeField: 'count',
  }),
  lookup({
    name: 'net5_group',
    network: 'net5',
    description: 'Look up a net5 group by id or URL: name, privacy, description and member count.',
    input: eitherOf({ ...groupRef }, groupKeys),
    output: oneOf(group),
  }),
  list({
    name: 'net5_group_posts',
    network: 'net5',
    description: 'Recent posts in a public net5 group (private groups answer with no items).',
    input: eitherOf({ ...groupRef, count, cursor }, groupKeys),
    output: listOf(post),
    pageSize: 10,
    sizeField: 'count',
  }),
  list({
    name: 'net5_search',
    network: 'net5',
    description: 'Search public net5 posts by keywords, ranked by relevance.',
    input: z.strictObject({ query, limit, cursor }),
    output: listOf(post),
    price: SEARCH_PRICE,
    pageSize: 10,
    sizeField: 'limit',
  }),
] as const;
