import { readableSql } from '../access/index.ts';
import type { Actor } from '../access/index.ts';
import { paginate, type Page } from '../core/pagination.ts';
import type { z } from '../core/zod.ts';
import type { Deps } from '../platform/deps.ts';
import type { recallItemSchema, recallQuery } from './message-schema.ts';

const type = 'chat_conversation';

/** Bounded: two fragments of at most 30 words each, and never more than 600 characters. */
const headline = `left(ts_headline('english', r.content, websearch_to_tsquery('english', ?),
  'StartSel=<mark>, StopSel=</mark>, MaxWords=30, MinWords=10, MaxFragments=2, FragmentDelimiter=" … "'), 600)`;

export interface RecallRow {
  conversation_id: string;
  message_id: string;
  role: 'user' | 'assistant' | 'system' | 'tool';
  snippet: string;
  rank: number;
  created_at: Date;
  conversation_title: string | null;
}

/**
 * How many of the newest matching messages are ranked. Ranking every match of a common word would
 * read hundreds of thousands of rows (ts_rank needs each one's vector); the newest few thousand
 * are what a person recalling a conversation means, and they come off an index.
 */
export const RECALL_CANDIDATES = 2_000;

/**
 * Full-text search over the messages of the live conversations the caller can read: the
 * readable-by predicate runs in the query, so a page never holds a message of another's private
 * conversation. The newest RECALL_CANDIDATES matches are ranked by ts_rank (as float8, so the
 * cursor compares exactly), then message id; only the page's rows get a snippet.
 */
export async function recall(deps: Pick<Deps, 'db'>, actor: Actor, query: z.output<typeof recallQuery>): Promise<Page<RecallRow>> {
  const viewer = await actor.viewer(query.organization_id);
  if (!viewer) return { items: [], next_cursor: null };
  const { db } = deps;
  const readable = readableSql(type, 'c', viewer);
  const candidates = db
    .select('m.id', 'm.conversation_id', 'm.role', 'm.created_at', 'm.search', 'c.title as conversation_title')
    .from('conversation_messages as m')
    .join('conversations as c', 'c.id', 'm.conversation_id')
    .where('m.organization_id', query.organization_id)
    .whereRaw(`m.search @@ websearch_to_tsquery('english', ?)`, [query.q])
    .whereNull('c.deleted_at')
    .whereRaw(readable.sql, readable.bindings as never[])
    .orderBy('m.created_at', 'desc')
    .limit(RECALL_CANDIDATES);
  const ranked = db
    .select(
      'r.id as message_id',
      'r.conversation_id',
      'r.role',
      'r.created_at',
      'r.conversation_title',
      db.raw(`ts_rank(r.search, websearch_to_tsquery('english', ?))::float8 AS rank`, [query.q]),
    )
    .from(candidates.as('r'));
  const page = await paginate<Omit<RecallRow, 'snippet'>>(
    db.select('k.conversation_id', 'k.message_id', 'k.role', 'k.rank', 'k.created_at', 'k.conversation_title').from(ranked.as('k')),
    [
      { column: 'k.rank', direction: 'desc', type: 'number' },
      { column: 'k.message_id', direction: 'asc' },
    ],
    query,
  );
  // Snippets for the page only: ts_headline re-parses the whole message, so never for every candidate.
  const snippets = new Map<string, string>();
  if (page.items.length > 0) {
    const rows = await db('conversation_messages as r')
      .whereIn(
        'r.id',
        page.items.map((item) => item.message_id),
      )
      .select('r.id', db.raw(`${headline} AS snippet`, [query.q]));
    for (const row of rows as { id: string; snippet: string }[]) snippets.set(row.id, row.snippet);
  }
  return { items: page.items.map((item) => ({ ...item, snippet: snippets.get(item.message_id) ?? '' })), next_cursor: page.next_cursor };
}

export function presentRecallHit(row: RecallRow): z.input<typeof recallItemSchema> {
  return {
    conversation_id: row.conversation_id,
    message_id: row.message_id,
    role: row.role,
    snippet: row.snippet,
    rank: Number(row.rank),
    created_at: row.created_at.toISOString(),
    conversation_title: row.conversation_title,
  };
}
