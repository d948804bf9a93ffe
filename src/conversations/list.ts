import type { Knex } from 'knex';
import { allows, roleOfRank, selectRoleRank, whereReadable, type Viewer } from '../access/index.ts';
import type { Actor } from '../access/index.ts';
import { decodeCursor, paginate, type Page } from '../core/pagination.ts';
import { likePattern } from '../core/search.ts';
import { conversationColumns, type ConversationRow, type ListExtras } from './presenter.ts';

const type = 'chat_conversation';

/**
 * The access module's `sharedSql` (visibility not private, or any grant), written with a count so
 * Postgres probes the grants index for the page's rows instead of hashing the whole grants table
 * (bench/conversations.ts: 20k grants cost ~2–10 ms per request that way).
 */
const sharedOnPage = (alias: string) =>
  `(${alias}.visibility <> 'private' OR (SELECT count(*) FROM resource_grants sg WHERE sg.resource_type = '${type}' AND sg.resource_id = ${alias}.id) > 0)`;

/** Selects what the list extras of spec 2.3 (`shared`, `can_edit`, `can_delete`) are computed from. */
export function selectListExtras<Q extends Knex.QueryBuilder>(db: Knex, query: Q, alias: string, viewer: Viewer): Q {
  query.select(db.raw(`${sharedOnPage(alias)} AS shared`));
  return selectRoleRank(db, query, type, alias, viewer);
}

/** A row selected with `selectListExtras`, turned into a conversation with its list extras. */
export function withListExtras({ access_rank, ...row }: Record<string, unknown>): ConversationRow & ListExtras {
  const role = roleOfRank(Number(access_rank));
  return {
    ...(row as unknown as ConversationRow),
    shared: Boolean(row.shared),
    can_edit: allows(type, role, 'edit'),
    can_delete: allows(type, role, 'delete'),
  };
}

export interface ConversationListQuery {
  organization_id: string;
  filter: 'mine' | 'shared' | 'involved' | 'all';
  include_scheduled: boolean;
  deleted: boolean;
  search?: string | undefined;
  created_by?: string | undefined;
  visibility?: 'private' | 'workspace' | 'public' | undefined;
  project_ids?: string[] | undefined;
  limit: number;
  cursor?: string | undefined;
}

/**
 * GET /conversations: the readable-by predicate and every filter run in SQL, newest first, paged
 * by (created_at, id) so rows inserted while paging never shift or repeat a page.
 */
export async function listConversations(db: Knex, actor: Actor, q: ConversationListQuery): Promise<Page<ConversationRow & ListExtras>> {
  const viewer = await actor.viewer(q.organization_id);
  // Lists name no resource: a non-member simply sees nothing (spec 4.1).
  if (!viewer) return { items: [], next_cursor: null };
  const me = actor.userId;
  const query = selectListExtras(db, db('conversations as c').select(conversationColumns('c')), 'c', viewer);
  whereReadable(query, type, 'c', viewer);
  const grantedToMe = `EXISTS (SELECT 1 FROM resource_grants mg WHERE mg.resource_type = '${type}' AND mg.resource_id = c.id AND mg.user_id = ?)`;
  if (q.filter === 'mine') query.where('c.created_by_id', me);
  if (q.filter === 'shared') query.whereNot('c.created_by_id', me).whereRaw(grantedToMe, [me]);
  if (q.filter === 'involved') query.where((w) => w.where('c.created_by_id', me).orWhereRaw(grantedToMe, [me]));
  if (!q.include_scheduled) query.whereNull('c.schedule_id');
  if (q.deleted) query.whereNotNull('c.deleted_at');
  else query.whereNull('c.deleted_at');
  if (q.search) query.whereRaw(`lower(c.title) LIKE ?`, [likePattern(q.search)]);
  if (q.created_by) query.where('c.created_by_id', q.created_by);
  if (q.visibility) query.where('c.visibility', q.visibility);
  if (q.project_ids) {
    query.whereRaw(`EXISTS (SELECT 1 FROM project_items pf WHERE pf.item_type = '${type}' AND pf.item_id = c.id AND pf.project_id = ANY(?::uuid[]))`, [
      q.project_ids,
    ]);
  }
  // Redundant with the keyset condition, but as a plain bound the index can seek to it: deep pages cost what the first does.
  if (q.cursor !== undefined) query.whereRaw('c.created_at <= ?::timestamptz', [decodeCursor(q.cursor, 2)[0]!]);
  const page = await paginate<Record<string, unknown>>(
    query,
    [
      { column: 'c.created_at', direction: 'desc', type: 'timestamp' },
      { column: 'c.id', direction: 'desc' },
    ],
    { limit: q.limit, cursor: q.cursor },
  );
  return { next_cursor: page.next_cursor, items: page.items.map(withListExtras) };
}
