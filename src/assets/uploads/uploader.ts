// Who an upload acts for: its creator, who must still be allowed to create in its organization (and
// to file into its project) at every request and when it finishes — the rule POST /assets/uploads checked.
import type { Knex } from 'knex';
import type { Actor } from '../../access/index.ts';
import type { Db, Tx } from '../../db/knex.ts';
import { memberJoinSql, roleHoldsSql } from '../../members/index.ts';
import type { JobFailure } from '../presenter.ts';
import type { UploadRow } from './rows.ts';

/** Why an upload whose creator lost access ends (`canceled`). */
export const uploaderLostAccess: JobFailure = {
  code: 'uploader_lost_access',
  message: 'the member who started the upload may no longer create assets in the organization (or file into its project)',
};

/** SQL boolean over the upload aliased `u`: its creator is still a member whose role holds `resources.create`. */
export const uploaderMayCreateSql = (alias = 'u') =>
  `EXISTS (SELECT 1 FROM (SELECT 1) one ${memberJoinSql(`${alias}.organization_id`, `${alias}.created_by_id`)} WHERE ${roleHoldsSql('resources.create')})`;

/** The project the upload's asset was filed into when it was created, if any. */
const originProject = (db: Db | Tx | Knex, assetId: string) =>
  db('project_items').where({ item_type: 'asset', item_id: assetId, via: 'origin' }).first('project_id') as Promise<{ project_id: string } | undefined>;

/** May the caller, the upload's creator, still send it bytes? A member holding resources.create, who can still file into its project. */
export async function mayStillUpload(db: Db, actor: Actor, upload: UploadRow): Promise<boolean> {
  const membership = await actor.membership(upload.organization_id);
  if (!membership?.permissions.has('resources.create')) return false;
  const filed = await originProject(db, upload.asset_id);
  if (!filed) return true;
  const project = await actor.resource(db, 'project', filed.project_id, 'read').catch(() => null);
  return project !== null && project.row.deleted_at === null && project.role !== 'viewer';
}

/** In the finishing transaction: is the creator still a member who may create? (The request checked the project.) */
export async function uploaderMayStillCreate(trx: Tx, upload: UploadRow): Promise<boolean> {
  const { rows } = await trx.raw(`SELECT ${uploaderMayCreateSql()} AS may FROM asset_uploads u WHERE u.id = ?`, [upload.id]);
  return rows[0]?.may === true;
}
