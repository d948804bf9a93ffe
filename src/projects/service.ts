import type { Knex } from 'knex';
import { changeLive, listReadable, recordLifecycle, requireLive, restore, softDelete } from '../access/index.ts';
import { recordActivity } from '../core/activity.ts';
import { conflict } from '../core/errors.ts';
import type { Page } from '../core/pagination.ts';
import type { z } from '../core/zod.ts';
import type { Actor } from '../access/index.ts';
import { normaliseSlug } from '../organizations/index.ts';
import { type Deps, onTransaction } from '../platform/deps.ts';
import { requireReadableSkill } from '../skills/index.ts';
import { checkToolNames } from '../conversations/index.ts';
import { projectColumns, type ProjectRow } from './presenter.ts';
import type { createProjectBody, listProjectsQuery, updateProjectBody } from './schema.ts';
import { inTransaction } from '../db/transaction.ts';

export type CreateProjectInput = z.output<typeof createProjectBody>;

const returning = [...projectColumns];
/** jsonb takes any JSON value; pg would send arrays as Postgres arrays, so serialise explicitly. */
const jsonb = (value: unknown) => (value === undefined ? undefined : value === null ? null : JSON.stringify(value));

export async function createProject(deps: Pick<Deps, 'db'>, actor: Actor, input: CreateProjectInput): Promise<ProjectRow> {
  return inTransaction(deps.db, async (trx) => {
    // Serialise creations per organization so the free-slug choice cannot race.
    await trx.raw('SELECT pg_advisory_xact_lock(hashtext(?))', [`projects:${input.organization_id}`]);
    if (input.slug && (await slugTaken(trx, input.organization_id, input.slug)))
      throw conflict(`slug: "${input.slug}" is taken in this organization`, ['slug']);
    const slug = input.slug ?? (await freeSlug(trx, input.organization_id, input.title));
    const [project] = (await trx('projects')
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
      .returning(returning)) as ProjectRow[];
    await recordLifecycle(trx, actor, 'project', project!, 'created', { title: input.title, slug });
    return project!;
  });
}

export async function getProject(deps: Pick<Deps, 'db'>, actor: Actor, projectId: string): Promise<ProjectRow> {
  return (await actor.resource<ProjectRow>(deps.db, 'project', projectId, 'read')).row;
}

export function listProjects(deps: Pick<Deps, 'db'>, actor: Actor, query: z.output<typeof listProjectsQuery>): Promise<Page<ProjectRow>> {
  return listReadable<ProjectRow>(deps.db, actor, 'project', query, {
    alias: 'p',
    columns: projectColumns,
    searchColumns: ['title', 'slug'],
    refine: (q) => {
      if (query.archived) q.whereNotNull('p.archived_at');
      else q.whereNull('p.archived_at');
    },
  });
}

export function updateProject(
  deps: Pick<Deps, 'db' | 'reads'>,
  actor: Actor,
  projectId: string,
  changes: z.output<typeof updateProjectBody>,
): Promise<ProjectRow> {
  return changeLive<ProjectRow>(deps, actor, 'project', projectId, async (trx, row) => {
    if (changes.slug && changes.slug !== row.slug && (await slugTaken(trx, row.organization_id, changes.slug)))
      throw conflict(`slug: "${changes.slug}" is taken in this organization`, ['slug']);
    if (changes.knowledge_skill_id)
      await requireReadableSkill(onTransaction(deps, trx), actor, row.organization_id, changes.knowledge_skill_id, 'knowledge_skill_id');
    if (changes.chat_tools) await checkToolNames(trx, deps.reads, row.organization_id, actor.userId, changes.chat_tools, 'chat_tools');
    const { metadata, chat_tools, ...rest } = changes;
    const [project] = (await trx('projects')
      .where({ id: projectId })
      .update({
        ...rest,
        ...(metadata !== undefined && { metadata: jsonb(metadata) }),
        ...(chat_tools !== undefined && { chat_tools: jsonb(chat_tools) }),
        updated_at: trx.fn.now(),
      })
      .returning(returning)) as ProjectRow[];
    const before = Object.fromEntries(Object.keys(changes).map((k) => [k, row[k as keyof ProjectRow]]));
    await recordActivity(trx, {
      organizationId: row.organization_id,
      actorId: actor.userId,
      action: 'project.updated',
      subjectType: 'project',
      subjectId: projectId,
      data: { before, after: changes },
    });
    return project!;
  });
}

/** Soft delete (204); deleting a deleted project changes nothing. */
export const deleteProject = (deps: Pick<Deps, 'db'>, actor: Actor, projectId: string) => softDelete<ProjectRow>(deps, actor, 'project', projectId);

/** Restoring a live project returns it unchanged. */
export const restoreProject = (deps: Pick<Deps, 'db'>, actor: Actor, projectId: string) =>
  restore<ProjectRow>(deps, actor, 'project', projectId, { returning });

/** Archiving hides a project from default lists; it keeps sharing its items. Repeating it keeps the first archived_at. */
export async function archiveProject(deps: Pick<Deps, 'db'>, actor: Actor, projectId: string, archive: boolean): Promise<ProjectRow> {
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
  deps: Pick<Deps, 'db'>,
  actor: Actor,
  projectId: string,
  capability: 'archive',
  change: (row: ProjectRow, trx: Knex.Transaction) => Record<string, unknown> | null,
  action: string,
): Promise<ProjectRow> {
  return inTransaction(deps.db, async (trx) => {
    const { row } = await actor.resource<ProjectRow>(trx, 'project', projectId, capability, { forUpdate: true });
    const update = change(row, trx);
    if (!update) return row;
    const [project] = await trx('projects')
      .where({ id: projectId })
      .update({ ...update, updated_at: trx.fn.now() })
      .returning(returning);
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
  const taken = new Set<string>(
    await db('projects')
      .where({ organization_id: organizationId })
      .where((w) => w.where('slug', base).orWhere('slug', 'like', `${base}-%`))
      .pluck('slug'),
  );
  if (!taken.has(base)) return base;
  for (let i = 2; ; i++) if (!taken.has(`${base}-${i}`)) return `${base}-${i}`;
}

/**
 * A project's knowledge is a live skill of its organization that the one setting it can read. Who
 * reads it later is checked again at each chat turn: a turn's user who cannot read it is not sent it.
 */
