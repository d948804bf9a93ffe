import { randomUUID } from 'node:crypto';
import type { Actor } from '../access/index.ts';
import { decodeImageUpload } from '../core/image-upload.ts';
import { conflict } from '../core/errors.ts';
import { readImage, removeImage, replaceImage } from '../core/stored-image.ts';
import type { Deps } from '../platform/deps.ts';
import type { PresentableListing } from './presenter.ts';
import { lockForChange, readListing } from './rules.ts';
import { type CoverContentType, MAX_COVER_BYTES } from './schema.ts';
import { inTransaction } from '../db/transaction.ts';

/** Decodes the upload and checks that the bytes really are an image of the declared type (the organization logo's rule). */
export const decodeCover = (contentType: CoverContentType, data: string): Buffer => decodeImageUpload(contentType, data, MAX_COVER_BYTES);

/** Stores the cover, then points the listing at it in one transaction (see replaceImage). */
export async function replaceCover(deps: Deps, actor: Actor, id: string, contentType: CoverContentType, bytes: Buffer): Promise<PresentableListing> {
  const key = `skill-listings/${id}/cover/${randomUUID()}`;
  return replaceImage(deps, { what: 'cover', key, bytes, contentType }, () =>
    inTransaction(deps.db, async (trx) => {
      const before = await lockForChange(trx, actor, id);
      if (before.status === 'retired') throw conflict('status: a retired listing cannot be changed; publish it again first', ['status']);
      await trx('skill_listings')
        .where({ id })
        .update({ cover_key: key, cover_content_type: contentType, cover_updated_at: trx.fn.now(), updated_by_id: actor.userId, updated_at: trx.fn.now() });
      return { result: await readListing(trx, actor, id), replaced: before.cover_key };
    }),
  );
}

/** Removes the cover. Idempotent: without one the listing is unchanged. */
export async function removeCover(deps: Deps, actor: Actor, id: string): Promise<void> {
  await removeImage(deps, 'cover', () =>
    inTransaction(deps.db, async (trx) => {
      const before = await lockForChange(trx, actor, id);
      if (!before.cover_key) return { result: undefined, replaced: null };
      await trx('skill_listings')
        .where({ id })
        .update({ cover_key: null, cover_content_type: null, cover_updated_at: trx.fn.now(), updated_by_id: actor.userId, updated_at: trx.fn.now() });
      return { result: undefined, replaced: before.cover_key };
    }),
  );
}

/** The cover bytes for whoever can read the listing; 404 without a cover. */
export async function readCover(deps: Deps, actor: Actor, id: string): Promise<{ body: Buffer; contentType: string }> {
  const listing = await readListing(deps.db, actor, id);
  return readImage(deps, 'cover', { key: listing.cover_key, contentType: listing.cover_content_type });
}
