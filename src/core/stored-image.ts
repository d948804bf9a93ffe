import { notFound } from './errors.ts';

/** What keeping a record's image uses: the object storage (src/providers/storage) and a logger for what is left behind. */
export interface ImageStore {
  providers: {
    storage: {
      put(key: string, body: Buffer, contentType: string): Promise<unknown>;
      get(key: string): Promise<{ body: Buffer; contentType: string } | null>;
      delete(key: string): Promise<void>;
    };
  };
  log: { warn(details: object, message: string): void };
}

/** A switch of the record's image, in the record's own transaction: what it answers, and the object key it replaced. */
export interface ImageSwitch<T> {
  result: T;
  replaced: string | null;
}

/**
 * Replaces a record's image (an organization's logo, a listing's cover). The bytes are stored under
 * `key` (fresh for every upload) before anything changes; `point` then switches the record to them in
 * one transaction. The object it replaced is deleted only after that commit, and on any failure the
 * new one is deleted instead: a failed request never leaves a record pointing at missing or
 * half-replaced bytes.
 */
export async function replaceImage<T>(
  deps: ImageStore,
  image: { what: string; key: string; bytes: Buffer; contentType: string },
  point: () => Promise<ImageSwitch<T>>,
): Promise<T> {
  await deps.providers.storage.put(image.key, image.bytes, image.contentType);
  try {
    const { result, replaced } = await point();
    if (replaced) await deleteQuietly(deps, image.what, replaced);
    return result;
  } catch (error) {
    await deleteQuietly(deps, image.what, image.key);
    throw error;
  }
}

/** Removes a record's image: `unpoint` clears it in one transaction; the object goes after the commit. */
export async function removeImage<T>(deps: ImageStore, what: string, unpoint: () => Promise<ImageSwitch<T>>): Promise<T> {
  const { result, replaced } = await unpoint();
  if (replaced) await deleteQuietly(deps, what, replaced);
  return result;
}

/** The image's bytes and type (the type the record stored, else the object's); 404 naming `what` without one. */
export async function readImage(
  deps: ImageStore,
  what: string,
  image: { key: string | null; contentType: string | null },
): Promise<{ body: Buffer; contentType: string }> {
  if (!image.key) throw notFound(what);
  const stored = await deps.providers.storage.get(image.key);
  if (!stored) throw notFound(what);
  return { body: stored.body, contentType: image.contentType ?? stored.contentType };
}

/** An orphaned object costs storage, not correctness: log it rather than fail the request. */
async function deleteQuietly(deps: ImageStore, what: string, key: string): Promise<void> {
  await deps.providers.storage.delete(key).catch((error: unknown) => deps.log.warn({ err: error, key }, `could not delete a replaced ${what} object`));
}
