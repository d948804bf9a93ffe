import { paginate, type Page } from '../core/pagination.ts';
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

/** The organization's feed, newest first (keyset on created_at, id: stable under new events). */
export async function activityFeed(deps: Deps, organizationId: string, filter: ActivityFilter): Promise<Page<ActivityEventRow>> {
  const query = deps.db('activity_events as e').where('e.organization_id', organizationId).select(activityEventColumns);
  if (filter.action) query.where('e.action', filter.action);
  if (filter.actor_id) query.where('e.actor_id', filter.actor_id);
  if (filter.subject_type) query.where('e.subject_type', filter.subject_type);
  if (filter.since) query.where('e.created_at', '>=', filter.since);
  return paginate<ActivityEventRow & Record<string, unknown>>(
    query,
    [
      { column: 'e.created_at', direction: 'desc', type: 'timestamp' },
      { column: 'e.id', direction: 'desc' },
    ],
    filter,
  );
}
