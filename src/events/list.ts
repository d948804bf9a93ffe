import type { Knex } from 'knex';
import type { Viewer } from '../access/index.ts';
import type { EventType } from '../core/events.ts';
import { decodeCursor, paginate, type Page } from '../core/pagination.ts';
import type { Membership } from '../members/index.ts';
import type { Deps } from '../platform/deps.ts';
import { eventColumns, type EventRow } from './presenter.ts';
import { EVENT_RETENTION_DAYS } from './schema.ts';
import { visibleEventSql } from './visibility.ts';

export interface EventFilter {
  limit: number;
  cursor?: string | undefined;
  type?: EventType[] | undefined;
  since?: string | undefined;
  until?: string | undefined;
}

/**
 * The organization's events the member may see, newest first (keyset on created_at, seq), within
 * the retention window. Access is decided inside the one statement, so pages are never short.
 */
export async function listEvents(deps: Pick<Deps, 'db'>, viewer: Viewer, membership: Membership, filter: EventFilter): Promise<Page<EventRow>> {
  const visible = visibleEventSql(viewer, membership);
  const query = deps
    .db('events as e')
    .where('e.organization_id', viewer.organizationId)
    .whereRaw(`e.created_at > now() - make_interval(days => ?)`, [EVENT_RETENTION_DAYS])
    .whereRaw(visible.sql, visible.bindings as Knex.RawBinding[])
    .select(eventColumns);
  if (filter.type) query.whereIn('e.type', filter.type);
  if (filter.since) query.where('e.created_at', '>=', filter.since);
  if (filter.until) query.where('e.created_at', '<', filter.until);
  // A plain bound beside the keyset condition lets the index seek to it (as in the activity feed).
  if (filter.cursor !== undefined) query.whereRaw('e.created_at <= ?::timestamptz', [decodeCursor(filter.cursor, 2)[0]!]);
  return paginate<EventRow>(
    query,
    [
      { column: 'e.created_at', direction: 'desc', type: 'timestamp' },
      { column: 'e.seq', direction: 'desc', type: 'number' },
    ],
    filter,
  );
}
