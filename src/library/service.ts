import type { Knex } from 'knex';
import { readableSql, registeredTypes } from '../access/index.ts';
import { decodeCursor, encodeCursor, type Page } from '../core/pagination.ts';
import type { Actor } from '../access/index.ts';
import { likePattern } from '../core/search.ts';
import { libraryTypesOf, type LibraryType } from './types.ts';

export interface LibraryRow {
  type: string;
  id: string;
  title: string | null;
  subtype: string | null;
  visibility: 'private' | 'workspace' | 'public';
  created_by_id: string | null;
  created_at: Date;
  updated_at: Date;
}

export interface LibraryQuery {
  organization_id: string;
  types?: string[] | undefined;
  search?: string | undefined;
  limit: number;
  cursor?: string | undefined;
}

/**
 * GET /library: live resources the caller can read, most recently updated first. One UNION ALL
 * branch per kind, each filtered by the readable-by predicate and resumed after the cursor
 * (updated_at, id) with its own LIMIT, so each branch reads at most one page from its index.
 */
export async function listLibrary(db: Knex, actor: Actor, q: LibraryQuery): Promise<Page<LibraryRow>> {
  const viewer = await actor.viewer(q.organization_id);
  if (!viewer) return { items: [], next_cursor: null };
  const after = q.cursor === undefined ? null : decodeCursor(q.cursor, 2);
  const kinds = libraryTypesOf(registeredTypes()).filter((t) => !q.types || q.types.includes(t.type));
  const branches = kinds.map((kind) => branch(kind, viewer, q, after));
  const sql = `SELECT * FROM (${branches.map((b) => `(${b.sql})`).join(' UNION ALL ')}) lib ORDER BY lib.updated_at DESC, lib.id DESC LIMIT ?`;
  const { rows } = (await db.raw(sql, [...branches.flatMap((b) => b.bindings), q.limit + 1] as Knex.RawBinding[])) as {
    rows: (LibraryRow & { cursor_at: string })[];
  };
  const items = rows.slice(0, q.limit);
  const last = items.at(-1);
  const next_cursor = rows.length > q.limit && last ? encodeCursor([last.cursor_at, last.id]) : null;
  return { items: items.map(({ cursor_at: _, ...item }) => item), next_cursor };
}

function branch(kind: LibraryType, viewer: Parameters<typeof readableSql>[2], q: LibraryQuery, after: (string | number)[] | null) {
  const readable = readableSql(kind.resourceType, 't', viewer);
  const conditions = ['t.organization_id = ?', 't.deleted_at IS NULL', readable.sql];
  const bindings: unknown[] = [viewer.organizationId, ...readable.bindings];
  if (kind.where) conditions.push(kind.where);
  if (q.search) {
    conditions.push(`lower(${kind.title}) LIKE ?`);
    bindings.push(likePattern(q.search));
  }
  if (after) {
    conditions.push('(t.updated_at < ?::timestamptz OR (t.updated_at = ?::timestamptz AND t.id < ?::uuid))');
    bindings.push(after[0], after[0], after[1]);
  }
  bindings.push(q.limit + 1);
  return {
    // updated_at travels in the cursor as text: a JS Date would drop the microseconds.
    sql: `SELECT '${kind.type}'::text AS type, t.id, ${kind.title} AS title, ${kind.subtype} AS subtype, t.visibility, t.created_by_id, t.created_at, t.updated_at, t.updated_at::text AS cursor_at
      FROM ${kind.table} t WHERE ${conditions.join(' AND ')} ORDER BY t.updated_at DESC, t.id DESC LIMIT ?`,
    bindings,
  };
}
