import { IMAGE_DIMENSIONS_RULE, type UploadImageType, uploadImageFormats } from '../../core/image-upload.ts';
import { z } from '../../core/zod.ts';

export const MAX_LOGO_BYTES = 1024 * 1024;

/** Accepted logo types and the format `image-size` must detect in the bytes. */
export const logoFormats = uploadImageFormats;
export type LogoContentType = UploadImageType;

export const putLogoBody = z
  .object({
    content_type: z.enum(Object.keys(logoFormats) as [LogoContentType, ...LogoContentType[]]),
    data: z.base64().openapi({ description: `The image, base64-encoded; at most 1 MiB once decoded, ${IMAGE_DIMENSIONS_RULE} (by its header, else 400).` }),
  })
  .strict()
  .openapi('PutOrganizationLogo');

export const logoQuery = z.object({
  v: z.string().max(32).optional().openapi({ description: 'Cache buster from `logo_url`; ignored.' }),
});
