import { viewerIn, whereReadable } from '../access/index.ts';
import { paginate, type Page } from '../core/pagination.ts';
import type { Caller } from '../core/caller.ts';
import { permissionsOf } from '../organizations/membership.ts';
import type { Deps } from '../platform/deps.ts';

export interface ProjectAccount {
  organization_id: string;
  name: string;
  slug: string;
  role: string;
  can_create_projects: boolean;
  project_count: number;
  archived_project_count: number;
}

/**
 * GET /projects/accounts: the organizations the caller belongs to (where projects are filed),
 * oldest membership first, with whether they may create projects there and how many projects
 * they can read (live; unarchived and archived counted apart).
 */
export async function listProjectAccounts(deps: Deps, caller: Caller, page: { limit: number; cursor?: string | undefined }): Promise<Page<ProjectAccount>> {
  const { db } = deps;
  const q = db('organization_members as m')
    .join('organizations as o', 'o.id', 'm.organization_id')
    .where('m.user_id', caller.userId)
    .whereNull('o.deleted_at')
    .select('o.id', 'o.name', 'o.slug', 'm.role');
  const result = await paginate<Record<string, any>>(q, [{ column: 'm.created_at', direction: 'asc', type: 'timestamp' }, { column: 'o.id', direction: 'asc' }], page);
  const items: ProjectAccount[] = [];
  for (const org of result.items) {
    const viewer = (await viewerIn(db, org.id, caller.userId))!;
    const counts = whereReadable(db('projects as p'), 'project', 'p', viewer)
      .whereNull('p.deleted_at')
      .first(db.raw('count(*) FILTER (WHERE p.archived_at IS NULL)::int AS live'), db.raw('count(*) FILTER (WHERE p.archived_at IS NOT NULL)::int AS archived'));
    const [row, permissions] = await Promise.all([counts, permissionsOf(db, org.id, org.role)]);
    items.push({
      organization_id: org.id,
      name: org.name,
      slug: org.slug,
      role: org.role,
      can_create_projects: permissions.has('resources.create'),
      project_count: Number(row?.live ?? 0),
      archived_project_count: Number(row?.archived ?? 0),
    });
  }
  return { items, next_cursor: result.next_cursor };
}
