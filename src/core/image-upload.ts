import { imageSize } from 'image-size';
import { AppError, badRequest } from './errors.ts';
import { base64, CHECKED_BY_SERVER, z } from './zod.ts';

/** Image types an upload (a logo, a cover) may declare, and the format `image-size` must find in the bytes. */
export const uploadImageFormats = { 'image/png': 'png', 'image/jpeg': 'jpg', 'image/webp': 'webp', 'image/gif': 'gif' } as const;
export type UploadImageType = keyof typeof uploadImageFormats;

/**
 * The largest image an upload may be: a few bytes of header can claim 100,000 × 100,000 pixels (a
 * 30 GB bitmap for whoever decodes it: a thumbnailer, a browser), so the header's dimensions are
 * checked before anything decodes the pixels.
 */
export const MAX_IMAGE_SIDE = 8192;
export const MAX_IMAGE_PIXELS = 40_000_000;
/** The limits as the API documents them (OpenAPI descriptions and refusals say the same). */
export const IMAGE_DIMENSIONS_RULE = `at most ${MAX_IMAGE_SIDE} pixels wide and high and ${MAX_IMAGE_PIXELS / 1_000_000} megapixels in all`;

/**
 * Decodes a base64 image upload and checks that the bytes really are an image of the declared
 * type (never trusting the declared type alone) and no larger than MAX_IMAGE_SIDE and
 * MAX_IMAGE_PIXELS by its header (read without decoding the pixels): empty → 400, over
 * `maxBytes` → 413, anything else → 400, each naming `data`.
 */
export function decodeImageUpload(contentType: UploadImageType, data: string, maxBytes: number): Buffer {
  const bytes = Buffer.from(data, 'base64');
  if (bytes.length === 0) throw badRequest('data: the image is empty', ['data']);
  if (bytes.length > maxBytes) {
    const limit = maxBytes % (1024 * 1024) === 0 ? ` (${maxBytes / (1024 * 1024)} MiB)` : '';
    throw new AppError(
      'validation_failed',
      `data: the image is ${bytes.length} bytes; the limit is ${maxBytes} bytes${limit}`,
      [{ path: ['data'], message: `at most ${maxBytes} bytes once decoded` }],
      { status: 413 },
    );
  }
  let header: ReturnType<typeof imageSize> | undefined;
  try {
    header = imageSize(bytes);
  } catch {
    header = undefined; // not an image format image-size knows
  }
  const detected = header?.type;
  if (!header || detected !== uploadImageFormats[contentType]) {
    throw badRequest(`data: the bytes are ${detected ? `a ${detected} image` : 'not an image'}, not ${contentType}`, ['data']);
  }
  const { width, height } = header;
  if (width > MAX_IMAGE_SIDE || height > MAX_IMAGE_SIDE || width * height > MAX_IMAGE_PIXELS) {
    throw new AppError('validation_failed', `data: the image is ${width}×${height} pixels; it may be ${IMAGE_DIMENSIONS_RULE}`, [
      { path: ['data'], message: IMAGE_DIMENSIONS_RULE },
    ]);
  }
  return bytes;
}

const mebibytes = (bytes: number) => `${bytes / (1024 * 1024)} MiB`;

/** The body of an image upload: the declared type and the base64 bytes, which decodeImageUpload checks against it. */
export const imageUploadBody = (maxBytes: number) =>
  z
    .object({
      content_type: z.enum(Object.keys(uploadImageFormats) as [UploadImageType, ...UploadImageType[]]),
      data: base64().openapi({
        description: `The image, base64-encoded; at most ${mebibytes(maxBytes)} once decoded, ${IMAGE_DIMENSIONS_RULE} (by its header, else 400 naming it: the bytes are checked by the server).`,
        [CHECKED_BY_SERVER]: true,
      }),
    })
    .strict();

/** The query of an image's URL (`logo_url`, `cover_url`): a version that busts caches when the image changes. */
export const imageUrlQuery = (urlField: string) =>
  z.object({
    v: z
      .string()
      .max(32)
      .optional()
      .openapi({ description: `Cache buster from \`${urlField}\`; ignored.` }),
  });
