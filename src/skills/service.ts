import { changeLive, recordLifecycle, fileIntoProjectOnCreate, requireLive, restore, softDelete } from '../access/index.ts';
import { recordActivity } from '../core/activity.ts';
import { badRequest, conflict, isAppError, notFound } from '../core/errors.ts';
import type { Actor } from '../access/index.ts';
import type { Deps } from '../platform/deps.ts';
import type { Knex } from 'knex';
import type { z } from '../core/zod.ts';
import type { SkillRow, SkillVersionRow } from './presenter.ts';
import type { createOrganizationSkillBody } from './schema.ts';
import { appendVersion, findVersion, jsonFiles, recordFirstVersion, type SkillContent } from './versions.ts';
import { inTransaction } from '../db/transaction.ts';

const type = 'skill';

/** Both create operations: `POST /skills` and the organization-scoped one (organization from the path). */
export type NewSkill = z.output<typeof createOrganizationSkillBody> & { organization_id: string; project_id?: string | undefined };

/** A custom skill and its version 1, in one transaction. A live skill's name is unique in its organization (409). */
export async function createSkill(deps: Pick<Deps, 'db'>, actor: Actor, input: NewSkill): Promise<SkillRow> {
  return inTransaction(deps.db, async (trx) => {
    await requireNameFree(trx, input.organization_id, input.name);
    const [skill] = (await trx('skills')
      .insert({
        organization_id: input.organization_id,
        source: 'custom',
        ...jsonFiles({ name: input.name, description: input.description, body: input.body, files: input.files }),
        project_id: input.project_id ?? null,
        project_scoped: input.project_id !== undefined,
        created_by_id: actor.userId,
      })
      .returning('*')) as SkillRow[];
    await recordFirstVersion(trx, skill!, actor.userId);
    if (input.project_id) await fileIntoProjectOnCreate(trx, actor, { type, id: skill!.id, organizationId: input.organization_id }, input.project_id);
    await recordLifecycle(trx, actor, type, skill!, 'created', { name: skill!.name, version: 1 });
    return skill!;
  });
}

export async function getSkill(deps: Pick<Deps, 'db'>, actor: Actor, id: string): Promise<SkillRow> {
  return (await actor.resource<SkillRow>(deps.db, type, id, 'read')).row;
}

/**
 * A setting that names a skill (a project's knowledge, a conversation's own skill) takes a live skill
 * of its organization that the caller can read: else 400 naming `field`, with one message for a
 * skill that is missing, deleted, elsewhere or unreadable (nothing told apart).
 */
export async function requireReadableSkill(deps: Pick<Deps, 'db'>, actor: Actor, organizationId: string, skillId: string, field: string): Promise<void> {
  const refused = badRequest(`${field}: is not a live skill of this organization that you can read`, [field]);
  const skill = await getSkill(deps, actor, skillId).catch((error: unknown) => {
    throw isAppError(error, 'not_found') ? refused : error;
  });
  if (skill.deleted_at !== null || skill.organization_id !== organizationId) throw refused;
}

/** Every accepted change is a new version (even one that repeats the current content: it was asked for). */
export function updateSkill(deps: Deps, actor: Actor, id: string, changes: Partial<SkillContent>): Promise<SkillRow> {
  return changeLive<SkillRow>(deps, actor, type, id, async (trx, before) => {
    if (changes.name !== undefined && changes.name.toLowerCase() !== before.name.toLowerCase())
      await requireNameFree(trx, before.organization_id!, changes.name);
    const content: SkillContent = { name: before.name, description: before.description, body: before.body, files: before.files, ...changes };
    const { skill, version } = await appendVersion(trx, before, content, actor.userId);
    await recordActivity(trx, {
      organizationId: before.organization_id!,
      actorId: actor.userId,
      action: 'skill.updated',
      subjectType: type,
      subjectId: id,
      data: { version: version.version, fields: Object.keys(changes) },
    });
    return skill;
  });
}

const named = (row: SkillRow) => ({ name: row.name });

export const deleteSkill = (deps: Deps, actor: Actor, id: string) => softDelete<SkillRow>(deps, actor, type, id, named);

/** 409 when a live skill took the name meanwhile; restoring a live skill returns it unchanged. */
export const restoreSkill = (deps: Deps, actor: Actor, id: string) =>
  restore<SkillRow>(deps, actor, type, id, {
    returning: ['*'],
    activityData: named,
    check: (trx, row) => requireNameFree(trx, row.organization_id!, row.name),
  });

/** Restoring a version makes a new version with its content; history is never rewritten. */
export async function restoreSkillVersion(
  deps: Pick<Deps, 'db'>,
  actor: Actor,
  id: string,
  versionId: string,
): Promise<{ skill: SkillRow; version: SkillVersionRow }> {
  return inTransaction(deps.db, async (trx) => {
    const { row: before } = await actor.resource<SkillRow>(trx, type, id, 'edit', { forUpdate: true });
    const source = await findVersion(trx, id, versionId);
    if (!source) throw notFound('skill version');
    requireLive(before, type);
    if (source.name.toLowerCase() !== before.name.toLowerCase()) await requireNameFree(trx, before.organization_id!, source.name);
    const result = await appendVersion(trx, before, source, actor.userId, source.version);
    await recordActivity(trx, {
      organizationId: before.organization_id!,
      actorId: actor.userId,
      action: 'skill.version_restored',
      subjectType: type,
      subjectId: id,
      data: { version: result.version.version, restored_from_version: source.version },
    });
    return result;
  });
}

/** A clear 409 naming the field (the partial unique index is the backstop under races). */
export async function requireNameFree(trx: Knex, organizationId: string, name: string): Promise<void> {
  const taken = await trx('skills').where({ organization_id: organizationId }).whereNull('deleted_at').whereRaw('lower(name) = lower(?)', [name]).first('id');
  if (taken) throw conflict(`name: a skill named "${name}" already exists in this organization`, ['name']);
}
