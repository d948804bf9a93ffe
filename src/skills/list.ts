import type { Knex } from 'knex';
import { whereReadable } from '../access/index.ts';
import type { Actor } from '../access/index.ts';
import { likePattern } from '../core/search.ts';
import { paginate, type Page } from '../core/pagination.ts';
import type { SkillRow } from './presenter.ts';

export interface SkillListQuery {
  organization_id: string;
  deleted: boolean;
  search?: string | undefined;
  limit: number;
  cursor?: string | undefined;
}

/** GET /skills: readable custom skills of one organization, newest first, keyset paged in SQL. */
export async function listSkills(db: Knex, actor: Actor, q: SkillListQuery): Promise<Page<SkillRow>> {
  const viewer = await actor.viewer(q.organization_id);
  if (!viewer) return { items: [], next_cursor: null };
  const query = db('skills as s').select('s.*');
  whereReadable(query, 'skill', 's', viewer);
  if (q.deleted) query.whereNotNull('s.deleted_at');
  else query.whereNull('s.deleted_at');
  if (q.search) query.whereRaw('lower(s.name) LIKE ?', [likePattern(q.search)]);
  return paginate<SkillRow & Record<string, unknown>>(
    query,
    [
      { column: 's.created_at', direction: 'desc', type: 'timestamp' },
      { column: 's.id', direction: 'desc' },
    ],
    { limit: q.limit, cursor: q.cursor },
  );
}
