import type { Knex } from 'knex';
import { allows, listReadable, roleOfRank, selectRoleRank, type Viewer } from '../access/index.ts';
import type { Actor } from '../access/index.ts';
import type { Page } from '../core/pagination.ts';
import { conversationColumnNames, type ConversationRow, type ListExtras } from './presenter.ts';

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
  const me = actor.userId;
  const grantedToMe = `EXISTS (SELECT 1 FROM resource_grants mg WHERE mg.resource_type = '${type}' AND mg.resource_id = c.id AND mg.user_id = ?)`;
  const page = await listReadable<Record<string, unknown>>(db, actor, type, q, {
    alias: 'c',
    columns: conversationColumnNames,
    searchColumns: ['title'],
    refine: (query, viewer) => {
      selectListExtras(db, query, 'c', viewer);
      if (q.filter === 'mine') query.where('c.created_by_id', me);
      if (q.filter === 'shared') query.whereNot('c.created_by_id', me).whereRaw(grantedToMe, [me]);
      if (q.filter === 'involved') query.where((w) => w.where('c.created_by_id', me).orWhereRaw(grantedToMe, [me]));
      if (!q.include_scheduled) query.whereNull('c.schedule_id');
      if (q.visibility) query.where('c.visibility', q.visibility);
      if (q.project_ids) {
        query.whereRaw(`EXISTS (SELECT 1 FROM project_items pf WHERE pf.item_type = '${type}' AND pf.item_id = c.id AND pf.project_id = ANY(?::uuid[]))`, [
          q.project_ids,
        ]);
      }
    },
  });
  return { next_cursor: page.next_cursor, items: page.items.map(withListExtras) };
}
