import { whereReadable } from '../access/index.ts';
import { paginate, type Page } from '../core/pagination.ts';
import type { Actor } from '../access/index.ts';
import { membershipsOfUser } from '../members/index.ts';
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
export async function listProjectAccounts(
  deps: Pick<Deps, 'db'>,
  actor: Actor,
  page: { limit: number; cursor?: string | undefined },
): Promise<Page<ProjectAccount>> {
  const { db } = deps;
  const q = membershipsOfUser(db, actor.userId).select('o.id', 'o.name', 'o.slug', 'm.role');
  const result = await paginate<Record<string, any>>(
    q,
    [
      { column: 'm.created_at', direction: 'asc', type: 'timestamp' },
      { column: 'o.id', direction: 'asc' },
    ],
    page,
  );
  const items: ProjectAccount[] = [];
  for (const org of result.items) {
    const membership = await actor.member(org.id);
    const viewer = (await actor.viewer(org.id))!;
    const counts = whereReadable(db('projects as p'), 'project', 'p', viewer)
      .whereNull('p.deleted_at')
      .first(
        db.raw('count(*) FILTER (WHERE p.archived_at IS NULL)::int AS live'),
        db.raw('count(*) FILTER (WHERE p.archived_at IS NOT NULL)::int AS archived'),
      );
    const row = await counts;
    items.push({
      organization_id: org.id,
      name: org.name,
      slug: org.slug,
      role: org.role,
      can_create_projects: membership.permissions.has('resources.create'),
      project_count: Number(row?.live ?? 0),
      archived_project_count: Number(row?.archived ?? 0),
    });
  }
  return { items, next_cursor: result.next_cursor };
}
