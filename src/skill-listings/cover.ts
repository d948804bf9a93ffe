import { randomUUID } from 'node:crypto';
import type { Actor } from '../access/index.ts';
import { decodeImageUpload } from '../core/image-upload.ts';
import { conflict, notFound } from '../core/errors.ts';
import type { Deps } from '../platform/deps.ts';
import type { PresentableListing } from './presenter.ts';
import { lockForChange, readListing } from './rules.ts';
import { type CoverContentType, MAX_COVER_BYTES } from './schema.ts';
import { inTransaction } from '../db/transaction.ts';

/** Decodes the upload and checks that the bytes really are an image of the declared type (the organization logo's rule). */
export const decodeCover = (contentType: CoverContentType, data: string): Buffer => decodeImageUpload(contentType, data, MAX_COVER_BYTES);

/**
 * Stores the cover under a fresh key, then points the listing at it in one transaction. The old
 * object goes only after the commit, so a failed request never leaves a listing pointing at missing bytes.
 */
export async function replaceCover(deps: Deps, actor: Actor, id: string, contentType: CoverContentType, bytes: Buffer): Promise<PresentableListing> {
  const key = `skill-listings/${id}/cover/${randomUUID()}`;
  await deps.providers.storage.put(key, bytes, contentType);
  let previousKey: string | null = null;
  try {
    const listing = await inTransaction(deps.db, async (trx) => {
      const before = await lockForChange(trx, actor, id);
      if (before.status === 'retired') throw conflict('status: a retired listing cannot be changed; publish it again first', ['status']);
      previousKey = before.cover_key;
      await trx('skill_listings')
        .where({ id })
        .update({ cover_key: key, cover_content_type: contentType, cover_updated_at: trx.fn.now(), updated_by_id: actor.userId, updated_at: trx.fn.now() });
      return readListing(trx, actor, id);
    });
    if (previousKey) await deleteQuietly(deps, previousKey);
    return listing;
  } catch (error) {
    await deleteQuietly(deps, key);
    throw error;
  }
}

/** Removes the cover. Idempotent: without one the listing is unchanged. */
export async function removeCover(deps: Deps, actor: Actor, id: string): Promise<void> {
  const previousKey = await inTransaction(deps.db, async (trx) => {
    const before = await lockForChange(trx, actor, id);
    if (!before.cover_key) return null;
    await trx('skill_listings')
      .where({ id })
      .update({ cover_key: null, cover_content_type: null, cover_updated_at: trx.fn.now(), updated_by_id: actor.userId, updated_at: trx.fn.now() });
    return before.cover_key;
  });
  if (previousKey) await deleteQuietly(deps, previousKey);
}

/** The cover bytes for whoever can read the listing; 404 without a cover. */
export async function readCover(deps: Deps, actor: Actor, id: string): Promise<{ body: Buffer; contentType: string }> {
  const listing = await readListing(deps.db, actor, id);
  if (!listing.cover_key) throw notFound('cover');
  const stored = await deps.providers.storage.get(listing.cover_key);
  if (!stored) throw notFound('cover');
  return { body: stored.body, contentType: listing.cover_content_type ?? stored.contentType };
}

/** An orphaned object costs storage, not correctness: log it rather than fail the request. */
async function deleteQuietly(deps: Deps, key: string): Promise<void> {
  await deps.providers.storage.delete(key).catch((error: unknown) => deps.log.warn({ err: error, key }, 'could not delete a replaced cover object'));
}
