import type { Knex } from 'knex';
import { listReadable, type Actor } from '../access/index.ts';
import type { Page } from '../core/pagination.ts';
import type { SkillRow } from './presenter.ts';

export interface SkillListQuery {
  organization_id: string;
  deleted: boolean;
  search?: string | undefined;
  limit: number;
  cursor?: string | undefined;
}

/** GET /skills: readable custom skills of one organization, newest first, keyset paged in SQL. */
export function listSkills(db: Knex, actor: Actor, q: SkillListQuery): Promise<Page<SkillRow>> {
  return listReadable<SkillRow>(db, actor, 'skill', q, { alias: 's', columns: ['*'], searchColumns: ['name'] });
}
