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
 * Full-text search over the messages of the live conversations the caller can read: the
 * readable-by predicate runs in the query, so a page never holds a message of another's private
 * conversation. Ranked by ts_rank (as float8, so the cursor compares exactly), then message id.
 */
export async function recall(deps: Deps, actor: Actor, query: z.output<typeof recallQuery>): Promise<Page<RecallRow>> {
  const viewer = await actor.viewer(query.organization_id);
  if (!viewer) return { items: [], next_cursor: null };
  const { db } = deps;
  const readable = readableSql(type, 'c', viewer);
  const matches = db
    .select(
      'm.id as message_id',
      'm.conversation_id',
      'm.role',
      'm.content',
      'm.created_at',
      'c.title as conversation_title',
      db.raw(`ts_rank(m.search, websearch_to_tsquery('english', ?))::float8 AS rank`, [query.q]),
    )
    .from('conversation_messages as m')
    .join('conversations as c', 'c.id', 'm.conversation_id')
    .where('m.organization_id', query.organization_id)
    .whereRaw(`m.search @@ websearch_to_tsquery('english', ?)`, [query.q])
    .whereNull('c.deleted_at')
    .whereRaw(readable.sql, readable.bindings as never[]);
  const page = await paginate<Omit<RecallRow, 'snippet'> & { content?: string; snippet: string }>(
    db
      .select('r.conversation_id', 'r.message_id', 'r.role', 'r.rank', 'r.created_at', 'r.conversation_title', db.raw(`${headline} AS snippet`, [query.q]))
      .from(matches.as('r')),
    [
      { column: 'r.rank', direction: 'desc', type: 'number' },
      { column: 'r.message_id', direction: 'asc' },
    ],
    query,
  );
  return page as Page<RecallRow>;
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
