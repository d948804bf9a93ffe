import type { Knex } from 'knex';
import { type Actor, whereReadable } from '../access/index.ts';
import { badRequest } from '../core/errors.ts';
import { decodeCursor, type Page, paginate } from '../core/pagination.ts';
import { whereContains } from '../core/search.ts';
import { assetColumns, type AssetRow } from './presenter.ts';
import type { AssetType } from './schema.ts';

/**
 * Full-text search over assets: title (weight A) and the text enrichment extracted, or the inline
 * content (weight B), through `assets.search_vector` and its GIN index (migration
 * 20261127152000), with the same English configuration and query syntax
 * (`websearch_to_tsquery`: words, "phrases", or, -not) as the message recall.
 */

/** How many of the newest matches are ranked: ranking every match of a common word would read each one's vector. */
export const ASSET_SEARCH_CANDIDATES = 2_000;

const query = `websearch_to_tsquery('english', ?)`;

/** Bounded: two fragments of at most 30 words each, never more than 600 characters, from the first 100,000 characters of the text. */
const headline = `left(ts_headline('english', left(coalesce(a.extracted_text, a.content, a.title, ''), 100000), ${query},
  'StartSel=<mark>, StopSel=</mark>, MaxWords=30, MinWords=10, MaxFragments=2, FragmentDelimiter=" … "'), 600)`;

export interface AssetSearch {
  organizationId: string;
  /** What a person typed. */
  q: string;
  projectId?: string | undefined;
  type?: AssetType | undefined;
  createdBy?: string | undefined;
  /** Case-insensitive substring of the title or content, on top of the text match. */
  contains?: string | undefined;
  limit: number;
  cursor?: string | undefined;
}

export interface AssetMatch {
  rank: number;
  /** The text around the matches, each match in `<mark>…</mark>`; the rest is the asset's text as is (not HTML-escaped). */
  snippet: string;
}

/**
 * One page of the ids of the live assets the caller can read that match, best first (ts_rank as
 * float8, so the cursor compares exactly; then id), with each one's snippet. The readable-by
 * predicate runs in the query (src/access), so a page never holds a row the caller cannot read;
 * a caller outside the organization gets an empty page. Only the page's rows get a snippet.
 */
async function searchPage(db: Knex, actor: Actor, search: AssetSearch): Promise<Page<{ id: string } & AssetMatch>> {
  const viewer = await actor.viewer(search.organizationId);
  if (!viewer) return { items: [], next_cursor: null };
  // A cursor of the newest-first list (a timestamp first) is not one of these.
  if (search.cursor !== undefined && typeof decodeCursor(search.cursor, 2)[0] !== 'number') {
    throw badRequest('query.cursor: is not a cursor this list issued', ['cursor']);
  }
  const candidates = whereReadable(
    db('assets as a').select('a.id', db.raw(`ts_rank(a.search_vector, ${query})::float8 AS rank`, [search.q])),
    'asset',
    'a',
    viewer,
  )
    .whereNull('a.deleted_at')
    .whereRaw(`a.search_vector @@ ${query}`, [search.q])
    .orderBy([
      { column: 'a.created_at', order: 'desc' },
      { column: 'a.id', order: 'desc' },
    ])
    .limit(ASSET_SEARCH_CANDIDATES);
  if (search.type) candidates.where('a.type', search.type);
  if (search.createdBy) candidates.where('a.created_by_id', search.createdBy);
  if (search.projectId) {
    candidates.whereExists((filed) =>
      filed.select(db.raw('1')).from('project_items as pi').where({ 'pi.item_type': 'asset', 'pi.project_id': search.projectId }).whereRaw('pi.item_id = a.id'),
    );
  }
  if (search.contains) whereContains(candidates, ['a.title', 'a.content'], search.contains);
  const page = await paginate<{ id: string; rank: number }>(
    db.select('k.id', 'k.rank').from(candidates.as('k')),
    [
      { column: 'k.rank', direction: 'desc', type: 'number' },
      { column: 'k.id', direction: 'asc' },
    ],
    search,
  );
  const snippets = new Map<string, string>();
  if (page.items.length > 0) {
    const rows = (await db('assets as a')
      .whereIn(
        'a.id',
        page.items.map((item) => item.id),
      )
      .select('a.id', db.raw(`${headline} AS snippet`, [search.q]))) as { id: string; snippet: string }[];
    for (const row of rows) snippets.set(row.id, row.snippet);
  }
  return { items: page.items.map((item) => ({ id: item.id, rank: Number(item.rank), snippet: snippets.get(item.id) ?? '' })), next_cursor: page.next_cursor };
}

export interface AssetSearchHit extends AssetMatch {
  id: string;
  title: string | null;
  type: AssetType;
}

/**
 * The asset search as a reusable operation (the chat's asset-search tool calls it): ids, titles,
 * types, ranks and snippets of the live assets `actor` can read in the organization that match `q`.
 */
export async function searchAssets(
  db: Knex,
  actor: Actor,
  search: { organizationId: string; q: string; projectId?: string | undefined; limit: number; cursor?: string | undefined },
): Promise<Page<AssetSearchHit>> {
  const page = await searchPage(db, actor, search);
  if (page.items.length === 0) return { items: [], next_cursor: page.next_cursor };
  const rows = (await db('assets')
    .whereIn(
      'id',
      page.items.map((item) => item.id),
    )
    .select('id', 'title', 'type')) as Pick<AssetSearchHit, 'id' | 'title' | 'type'>[];
  const byId = new Map(rows.map((row) => [row.id, row]));
  // A row gone between the two reads (its organization deleted) is left out.
  return {
    items: page.items.flatMap((item) => {
      const row = byId.get(item.id);
      return row ? [{ ...row, rank: item.rank, snippet: item.snippet }] : [];
    }),
    next_cursor: page.next_cursor,
  };
}

/** GET /assets?q=…: the page as whole asset rows, each with its match. */
export async function searchAssetRows(db: Knex, actor: Actor, search: AssetSearch): Promise<Page<AssetRow & { search: AssetMatch }>> {
  const page = await searchPage(db, actor, search);
  if (page.items.length === 0) return { items: [], next_cursor: page.next_cursor };
  const rows = (await db('assets')
    .whereIn(
      'id',
      page.items.map((item) => item.id),
    )
    .select(assetColumns)) as AssetRow[];
  const byId = new Map(rows.map((row) => [row.id, row]));
  return {
    items: page.items.flatMap(({ id, rank, snippet }) => {
      const row = byId.get(id);
      return row ? [{ ...row, search: { rank, snippet } }] : [];
    }),
    next_cursor: page.next_cursor,
  };
}
