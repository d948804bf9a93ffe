import { decodeImageUpload } from '../../core/image-upload.ts';
import { MAX_LOGO_BYTES, type LogoContentType } from './schema.ts';

/** Decodes the upload and checks that the bytes really are an image of the declared type. */
export const decodeLogo = (contentType: LogoContentType, data: string): Buffer => decodeImageUpload(contentType, data, MAX_LOGO_BYTES);
