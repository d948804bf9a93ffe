import { imageSize } from 'image-size';
import { AppError, badRequest } from '../../core/errors.ts';
import { logoFormats, MAX_LOGO_BYTES, type LogoContentType } from './schema.ts';

/** Decodes the upload and checks that the bytes really are an image of the declared type. */
export function decodeLogo(contentType: LogoContentType, data: string): Buffer {
  const bytes = Buffer.from(data, 'base64');
  if (bytes.length === 0) throw badRequest('data: the image is empty', ['data']);
  if (bytes.length > MAX_LOGO_BYTES) {
    throw new AppError(
      'validation_failed',
      `data: the image is ${bytes.length} bytes; the limit is ${MAX_LOGO_BYTES} bytes (1 MiB)`,
      [{ path: ['data'], message: `at most ${MAX_LOGO_BYTES} bytes once decoded` }],
      { status: 413 },
    );
  }
  let detected: string | undefined;
  try {
    detected = imageSize(bytes).type;
  } catch {
    detected = undefined; // not an image format image-size knows
  }
  if (detected !== logoFormats[contentType]) {
    throw badRequest(`data: the bytes are ${detected ? `a ${detected} image` : 'not an image'}, not ${contentType}`, ['data']);
  }
  return bytes;
}
