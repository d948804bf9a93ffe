// Who an upload acts for: its creator, who must still be allowed to create in its organization (and
// to file into its project) at every request and when it finishes — the rule POST /assets/uploads checked.
import type { Knex } from 'knex';
import type { Actor } from '../../access/index.ts';
import { isAppError } from '../../core/errors.ts';
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

/** Read with the upload (uploaderAccessColumns): may its creator still create, and the project its asset was filed into, if any. */
export interface UploaderAccess {
  uploader_may_create: boolean;
  origin_project_id: string | null;
}

/** The columns of UploaderAccess, over the upload aliased `u`: read in the request's one query. */
export const uploaderAccessColumns = (db: Db | Knex) => [
  db.raw(`${uploaderMayCreateSql('u')} AS uploader_may_create`),
  db.raw(
    `(SELECT pi.project_id FROM project_items pi WHERE pi.item_type = 'asset' AND pi.item_id = u.asset_id AND pi.via = 'origin' LIMIT 1) AS origin_project_id`,
  ),
];

/** May the caller, the upload's creator, still send it bytes? A member holding resources.create, who can still file into its project. */
export async function mayStillUpload(db: Db, actor: Actor, upload: UploadRow & UploaderAccess): Promise<boolean> {
  if (!upload.uploader_may_create) return false;
  if (!upload.origin_project_id) return true;
  // Unreadable now (404) or refused: no access; anything else is a failure, not an answer.
  const project = await actor.resource(db, 'project', upload.origin_project_id, 'read').catch((error: unknown) => {
    if (isAppError(error)) return null;
    throw error;
  });
  return project !== null && project.row.deleted_at === null && project.role !== 'viewer';
}

/** In the finishing transaction: is the creator still a member who may create? (The request checked the project.) */
export async function uploaderMayStillCreate(trx: Tx, upload: UploadRow): Promise<boolean> {
  const { rows } = await trx.raw(`SELECT ${uploaderMayCreateSql()} AS may FROM asset_uploads u WHERE u.id = ?`, [upload.id]);
  return rows[0]?.may === true;
}
