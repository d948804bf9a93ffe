import type { Knex } from 'knex';
import { requireLive, whereReadable } from '../access/index.ts';
import { recordActivity } from '../activity/record.ts';
import { conflict } from '../core/errors.ts';
import { paginate, type Page } from '../core/pagination.ts';
import type { Actor } from '../access/actor.ts';
import { normaliseSlug } from '../organizations/slug.ts';
import type { Deps } from '../platform/deps.ts';
import { projectColumns, type ProjectRow } from './presenter.ts';

export interface CreateProjectInput {
  organization_id: string;
  title: string;
  slug?: string | undefined;
  emoji?: string | null | undefined;
  description?: string | null | undefined;
  visibility?: 'private' | 'workspace' | undefined;
  workspace_role?: 'viewer' | 'editor' | undefined;
  metadata?: unknown;
}

const returning = projectColumns as unknown as string[];
/** jsonb takes any JSON value; pg would send arrays as Postgres arrays, so serialise explicitly. */
const jsonb = (value: unknown) => (value === undefined ? undefined : value === null ? null : JSON.stringify(value));

export async function createProject(deps: Deps, actor: Actor, input: CreateProjectInput): Promise<ProjectRow> {
  return deps.db.transaction(async (trx) => {
    // Serialise creations per organization so the free-slug choice cannot race.
    await trx.raw('SELECT pg_advisory_xact_lock(hashtext(?))', [`projects:${input.organization_id}`]);
    if (input.slug && (await slugTaken(trx, input.organization_id, input.slug))) throw conflict(`slug: "${input.slug}" is taken in this organization`, ['slug']);
    const slug = input.slug ?? (await freeSlug(trx, input.organization_id, input.title));
    const [project] = await trx('projects')
      .insert({
        organization_id: input.organization_id,
        created_by_id: actor.userId,
        slug,
        title: input.title,
        emoji: input.emoji ?? null,
        description: input.description ?? null,
        visibility: input.visibility ?? 'private',
        workspace_role: input.workspace_role ?? 'viewer',
        metadata: jsonb(input.metadata) ?? null,
      })
      .returning(returning);
    await recordActivity(trx, { organizationId: input.organization_id, actorId: actor.userId, action: 'project.created', subjectType: 'project', subjectId: project.id, data: { title: input.title, slug } });
    return project;
  });
}

export async function getProject(deps: Deps, actor: Actor, projectId: string): Promise<ProjectRow> {
  return (await actor.resource<ProjectRow>(deps.db, 'project', projectId, 'read')).row;
}

export async function listProjects(
  deps: Deps,
  actor: Actor,
  query: { organization_id: string; archived?: boolean | undefined; deleted?: boolean | undefined; search?: string | undefined; created_by?: string | undefined; limit: number; cursor?: string | undefined },
): Promise<Page<ProjectRow>> {
  const viewer = await actor.viewer(query.organization_id);
  // Not a member: nothing is readable, and lists never answer 404 (spec 4.1).
  if (!viewer) return { items: [], next_cursor: null };
  const q = deps.db('projects as p').select(projectColumns.map((c) => `p.${c}`));
  whereReadable(q, 'project', 'p', viewer);
  q.where('p.organization_id', query.organization_id);
  if (query.deleted) q.whereNotNull('p.deleted_at');
  else q.whereNull('p.deleted_at');
  if (query.archived) q.whereNotNull('p.archived_at');
  else q.whereNull('p.archived_at');
  if (query.created_by) q.where('p.created_by_id', query.created_by);
  if (query.search) {
    const pattern = `%${query.search.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
    q.where((w) => w.whereRaw('lower(p.title) LIKE ?', [pattern]).orWhereRaw('p.slug LIKE ?', [pattern]));
  }
  return paginate<ProjectRow>(q, [{ column: 'p.created_at', direction: 'desc', type: 'timestamp' }, { column: 'p.id', direction: 'desc' }], query);
}

export async function updateProject(
  deps: Deps,
  actor: Actor,
  projectId: string,
  changes: { title?: string | undefined; slug?: string | undefined; emoji?: string | null | undefined; description?: string | null | undefined; metadata?: unknown },
): Promise<ProjectRow> {
  return deps.db.transaction(async (trx) => {
    const { row } = await actor.resource<ProjectRow>(trx, 'project', projectId, 'edit', { forUpdate: true });
    requireLive(row, 'project');
    if (changes.slug && changes.slug !== row.slug && (await slugTaken(trx, row.organization_id, changes.slug))) throw conflict(`slug: "${changes.slug}" is taken in this organization`, ['slug']);
    const { metadata, ...rest } = changes;
    const [project] = await trx('projects')
      .where({ id: projectId })
      .update({ ...rest, ...(metadata !== undefined && { metadata: jsonb(metadata) }), updated_at: trx.fn.now() })
      .returning(returning);
    const before = Object.fromEntries(Object.keys(changes).map((k) => [k, row[k]]));
    await recordActivity(trx, { organizationId: row.organization_id, actorId: actor.userId, action: 'project.updated', subjectType: 'project', subjectId: projectId, data: { before, after: changes } });
    return project;
  });
}

/** Soft delete (204); deleting a deleted project changes nothing. */
export async function deleteProject(deps: Deps, actor: Actor, projectId: string): Promise<void> {
  await deps.db.transaction(async (trx) => {
    const { row } = await actor.resource<ProjectRow>(trx, 'project', projectId, 'delete', { forUpdate: true });
    if (row.deleted_at) return;
    await trx('projects').where({ id: projectId }).update({ deleted_at: trx.fn.now(), deleted_by_id: actor.userId, updated_at: trx.fn.now() });
    await recordActivity(trx, { organizationId: row.organization_id, actorId: actor.userId, action: 'project.deleted', subjectType: 'project', subjectId: projectId });
  });
}

/** Restoring a live project returns it unchanged. */
export async function restoreProject(deps: Deps, actor: Actor, projectId: string): Promise<ProjectRow> {
  return stateChange(deps, actor, projectId, 'restore', (row) => (row.deleted_at ? { deleted_at: null, deleted_by_id: null } : null), 'project.restored');
}

/** Archiving hides a project from default lists; it keeps sharing its items. Repeating it keeps the first archived_at. */
export async function archiveProject(deps: Deps, actor: Actor, projectId: string, archive: boolean): Promise<ProjectRow> {
  return stateChange(
    deps,
    actor,
    projectId,
    'archive',
    (row, trx) => {
      requireLive(row, 'project');
      if (archive) return row.archived_at ? null : { archived_at: trx.fn.now(), archived_by_id: actor.userId };
      return row.archived_at ? { archived_at: null, archived_by_id: null } : null;
    },
    archive ? 'project.archived' : 'project.unarchived',
  );
}

async function stateChange(
  deps: Deps,
  actor: Actor,
  projectId: string,
  capability: 'restore' | 'archive',
  change: (row: ProjectRow, trx: Knex.Transaction) => Record<string, unknown> | null,
  action: string,
): Promise<ProjectRow> {
  return deps.db.transaction(async (trx) => {
    const { row } = await actor.resource<ProjectRow>(trx, 'project', projectId, capability, { forUpdate: true });
    const update = change(row, trx);
    if (!update) return row;
    const [project] = await trx('projects').where({ id: projectId }).update({ ...update, updated_at: trx.fn.now() }).returning(returning);
    await recordActivity(trx, { organizationId: row.organization_id, actorId: actor.userId, action, subjectType: 'project', subjectId: projectId });
    return project;
  });
}

async function slugTaken(db: Knex, organizationId: string, slug: string): Promise<boolean> {
  return Boolean(await db('projects').where({ organization_id: organizationId, slug }).first('id'));
}

/** The title's slug when free in the organization, else `slug-2`, `slug-3`… */
async function freeSlug(db: Knex, organizationId: string, title: string): Promise<string> {
  const base = normaliseSlug(title).slice(0, 70).replace(/-+$/, '') || 'project';
  const taken = new Set<string>(await db('projects').where({ organization_id: organizationId }).where((w) => w.where('slug', base).orWhere('slug', 'like', `${base}-%`)).pluck('slug'));
  if (!taken.has(base)) return base;
  for (let i = 2; ; i++) if (!taken.has(`${base}-${i}`)) return `${base}-${i}`;
}
