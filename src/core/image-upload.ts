import { imageSize } from 'image-size';
import { AppError, badRequest } from './errors.ts';

/** Image types an upload (a logo, a cover) may declare, and the format `image-size` must find in the bytes. */
export const uploadImageFormats = { 'image/png': 'png', 'image/jpeg': 'jpg', 'image/webp': 'webp', 'image/gif': 'gif' } as const;
export type UploadImageType = keyof typeof uploadImageFormats;

/**
 * Decodes a base64 image upload and checks that the bytes really are an image of the declared
 * type (never trusting the declared type alone): empty → 400, over `maxBytes` → 413, anything
 * else → 400, each naming `data`.
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
  let detected: string | undefined;
  try {
    detected = imageSize(bytes).type;
  } catch {
    detected = undefined; // not an image format image-size knows
  }
  if (detected !== uploadImageFormats[contentType]) {
    throw badRequest(`data: the bytes are ${detected ? `a ${detected} image` : 'not an image'}, not ${contentType}`, ['data']);
  }
  return bytes;
}
