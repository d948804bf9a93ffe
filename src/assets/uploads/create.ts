import { randomBytes } from 'node:crypto';
import { Upload } from '@tus/server';
import { type Actor, fileIntoProjectOnCreate } from '../../access/index.ts';
import { recordActivity } from '../../core/activity.ts';
import { badRequest } from '../../core/errors.ts';
import type { z } from '../../core/zod.ts';
import type { Tx } from '../../db/knex.ts';
import { inTransaction } from '../../db/transaction.ts';
import type { Deps } from '../../platform/deps.ts';
import { assetTypeOf } from '../media-types.ts';
import { type AssetRow, presentAsset } from '../presenter.ts';
import { returning } from '../service.ts';
import { reserveStorage } from './limits.ts';
import { presentUpload, type UploadRow } from './rows.ts';
import type { createUploadBody } from './schema.ts';
import { uploadStore } from './store.ts';
import { knownCharset, parseMediaType } from './verify.ts';

export type NewUpload = z.output<typeof createUploadBody>;
export type CreatedUpload = { asset: AssetRow; upload: UploadRow };
/** Runs the creation's transaction: `inTransaction`, or `withIdempotency` (which may answer a replay instead of running it). */
export type Transact<A> = (act: (trx: Tx) => Promise<A>) => Promise<A>;

/** The creation's answer: the asset and its upload (offset 0), as the API presents them. */
export const presentCreated =
  (origin: string) =>
  ({ asset, upload }: CreatedUpload) => ({ asset: presentAsset(asset), upload: presentUpload(upload, origin, 0) });

/**
 * Creates the asset (`upload_file_state: in_progress`) and its tus upload (Upload-Length = size,
 * offset 0) together: the limits are checked and the size reserved in the same transaction, and
 * the upload exists in the store before it commits, so neither exists without the other. Answers
 * what `answer` makes of them, inside the transaction (so an idempotent `transact` records it).
 */
export async function createUpload<A>(
  deps: Pick<Deps, 'config' | 'db' | 'providers'>,
  actor: Actor,
  input: NewUpload,
  answer: (created: CreatedUpload) => A,
  transact: Transact<A> = (act) => inTransaction(deps.db, act),
): Promise<A> {
  const { type: mediaType, charset } = parseMediaType(input.mime_type);
  const assetType = assetTypeOf(mediaType);
  if (!assetType)
    throw badRequest(`mime_type: ${mediaType} is not a type assets take (images, video, audio, documents, text, transcripts, 3D; never SVG)`, ['mime_type']);
  if (!knownCharset(charset)) throw badRequest(`mime_type: unknown charset "${charset}"`, ['mime_type']);
  const store = uploadStore(deps);
  const id = randomBytes(16).toString('hex');
  let created = false;
  try {
    return await transact(async (trx) => {
      await reserveStorage(trx, deps.config, input.organization_id, input.size);
      const [asset] = (await trx('assets')
        .insert({
          organization_id: input.organization_id,
          created_by_id: actor.userId,
          type: assetType,
          title: input.title ?? input.filename,
          mime_type: mediaType,
          upload_file_state: 'in_progress',
          enrichment_state: null,
          visibility: 'private',
        })
        .returning(returning)) as AssetRow[];
      if (input.project_id)
        await fileIntoProjectOnCreate(trx, actor, { type: 'asset', id: asset!.id, organizationId: asset!.organization_id }, input.project_id);
      const [upload] = (await trx('asset_uploads')
        .insert({
          id,
          asset_id: asset!.id,
          organization_id: input.organization_id,
          created_by_id: actor.userId,
          filename: input.filename,
          mime_type: input.mime_type,
          size: input.size,
          checksum_sha256: input.checksum_sha256 ?? null,
          store: store.kind,
          expires_at: trx.raw(`now() + make_interval(secs => ?)`, [deps.config.UPLOAD_EXPIRES_SECONDS]),
        })
        .returning('*')) as UploadRow[];
      await recordActivity(trx, {
        organizationId: input.organization_id,
        actorId: actor.userId,
        action: 'asset.upload_started',
        subjectType: 'asset',
        subjectId: asset!.id,
        data: { upload_id: id, filename: input.filename, mime_type: input.mime_type, size: input.size, project_id: input.project_id ?? null },
      });
      await store.datastore.create(
        new Upload({
          id,
          size: input.size,
          offset: 0,
          // filetype is what the running measurement (./received.ts) checks text against: the declared type.
          metadata: { asset_id: asset!.id, filename: input.filename, filetype: input.mime_type },
          creation_date: upload!.created_at.toISOString(),
        }),
      );
      created = true;
      return answer({ asset: asset!, upload: upload! });
    });
  } catch (error) {
    // The commit failed after the store made the upload: nothing refers to its (empty) bytes.
    if (created) await store.remove(id).catch(() => undefined);
    throw error;
  }
}
