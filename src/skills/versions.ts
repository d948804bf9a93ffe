import type { Knex } from 'knex';
import { paginate, type Page } from '../core/pagination.ts';
import type { SkillRow, SkillVersionRow } from './presenter.ts';

const versionColumns = [
  'v.id',
  'v.skill_id',
  'v.version',
  'v.name',
  'v.description',
  'v.body',
  'v.files',
  'v.restored_from_version',
  'v.created_by_id',
  'v.created_at',
];

export interface SkillContent {
  name: string;
  description: string;
  body: string;
  files: unknown;
}

/**
 * Makes the given content the skill's next version and its current state. The caller holds the
 * skill row lock, so version numbers are gap-free and never collide.
 */
export async function appendVersion(
  trx: Knex.Transaction,
  skill: SkillRow,
  content: SkillContent,
  actorId: string,
  restoredFromVersion: number | null = null,
): Promise<{ skill: SkillRow; version: SkillVersionRow }> {
  const next = skill.current_version + 1;
  const [version] = (await trx('skill_versions')
    .insert({ skill_id: skill.id, version: next, ...jsonFiles(content), restored_from_version: restoredFromVersion, created_by_id: actorId })
    .returning('*')) as SkillVersionRow[];
  const [updated] = (await trx('skills')
    .where({ id: skill.id })
    .update({ ...jsonFiles(content), current_version: next, updated_at: trx.fn.now() })
    .returning('*')) as SkillRow[];
  return { skill: updated!, version: version! };
}

/** The first version, written with the skill itself. */
export async function recordFirstVersion(trx: Knex.Transaction, skill: SkillRow, actorId: string): Promise<void> {
  await trx('skill_versions').insert({ skill_id: skill.id, version: 1, ...jsonFiles(skill), created_by_id: actorId });
}

/** jsonb needs JSON text: a JS array would otherwise be sent as a Postgres array. */
export function jsonFiles(content: SkillContent): SkillContent {
  return {
    name: content.name,
    description: content.description,
    body: content.body,
    files: content.files === undefined || content.files === null ? null : JSON.stringify(content.files),
  };
}

/** Newest version first. */
export function listVersions(
  db: Knex,
  skillId: string,
  page: { limit: number; cursor?: string | undefined },
): Promise<Page<SkillVersionRow & Record<string, unknown>>> {
  const query = db('skill_versions as v').where('v.skill_id', skillId).select(versionColumns);
  return paginate(query, [{ column: 'v.version', direction: 'desc', type: 'number' }], page);
}

export async function findVersion(db: Knex, skillId: string, versionId: string): Promise<SkillVersionRow | undefined> {
  return db('skill_versions as v').where({ 'v.skill_id': skillId, 'v.id': versionId }).first(versionColumns);
}
