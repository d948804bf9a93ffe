import type { Knex } from 'knex';
import { readableReferenceSql, type ResourceType, type Viewer } from '../access/index.ts';
import { decodeCursor, paginate, type Page } from '../core/pagination.ts';
import type { Deps } from '../platform/deps.ts';
import { activityEventColumns, type ActivityEventRow } from './presenter.ts';

export interface ActivityFilter {
  limit: number;
  cursor?: string | undefined;
  action?: string | undefined;
  actor_id?: string | undefined;
  subject_type?: string | undefined;
  since?: string | undefined;
}

/** Ids in an entry's data that name another resource: shown only to those who can read it (else null). */
const referencesInData: Record<string, ResourceType> = { project_id: 'project', forked_from_conversation_id: 'chat_conversation' };

/**
 * The organization's feed as `viewer` may see it, newest first (keyset on created_at, id: stable
 * under new events). An entry about a resource — its subject, or the item a project entry names —
 * appears only to those who can read that resource, decided by the access predicate of lists
 * inside the one statement, so the keyset pages over what the viewer sees: no short pages, every
 * visible entry once. Organization owners and admins read every resource of the organization and
 * see every entry.
 */
export async function activityFeed(deps: Deps, viewer: Viewer, filter: ActivityFilter): Promise<Page<ActivityEventRow>> {
  const query = deps
    .db('activity_events as e')
    .where('e.organization_id', viewer.organizationId)
    .select(activityEventColumns.filter((c) => c !== 'e.data'));
  if (filter.action) query.where('e.action', filter.action);
  if (filter.actor_id) query.where('e.actor_id', filter.actor_id);
  if (filter.subject_type) query.where('e.subject_type', filter.subject_type);
  if (filter.since) query.where('e.created_at', '>=', filter.since);
  if (viewer.administers) query.select('e.data');
  else {
    whereRaw(query, readableReferenceSql('e.subject_type', 'e.subject_id', viewer, true));
    whereRaw(query, readableReferenceSql(`e.data->>'item_type'`, `e.data->>'item_id'`, viewer, true));
    const data = redacted(viewer);
    query.select(deps.db.raw(`${data.sql} AS data`, data.bindings as Knex.RawBinding[]));
  }
  // Redundant with the keyset condition, but as a plain bound the feed index seeks to it instead of
  // filtering every newer entry again (as in listReadable, src/access/lifecycle.ts).
  if (filter.cursor !== undefined) query.whereRaw('e.created_at <= ?::timestamptz', [decodeCursor(filter.cursor, 2)[0]!]);
  return paginate<ActivityEventRow & Record<string, unknown>>(
    query,
    [
      { column: 'e.created_at', direction: 'desc', type: 'timestamp' },
      { column: 'e.id', direction: 'desc' },
    ],
    filter,
  );
}

const whereRaw = (query: Knex.QueryBuilder, fragment: { sql: string; bindings: unknown[] }) =>
  query.whereRaw(fragment.sql, fragment.bindings as Knex.RawBinding[]);

/** `e.data` with each resource id the viewer cannot read set to null (computed for the page's rows only). */
function redacted(viewer: Viewer): { sql: string; bindings: unknown[] } {
  const parts = Object.entries(referencesInData).map(([key, type]) => {
    const readable = readableReferenceSql(`'${type}'`, `e.data->>'${key}'`, viewer, true);
    return { sql: `(CASE WHEN e.data->>'${key}' IS NULL OR ${readable.sql} THEN '{}' ELSE '{"${key}": null}' END)::jsonb`, bindings: readable.bindings };
  });
  return { sql: ['e.data', ...parts.map((p) => p.sql)].join(' || '), bindings: parts.flatMap((p) => p.bindings) };
}
