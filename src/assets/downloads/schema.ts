import { timestamp, uuid, z } from '../../core/zod.ts';

export const downloadUrlBody = z
  .object({
    expires_in: z
      .number()
      .int()
      .min(1)
      .optional()
      .openapi({ description: 'Seconds the URL works; default `DOWNLOAD_URL_DEFAULT_SECONDS` (300), at most `DOWNLOAD_URL_MAX_SECONDS` (3600).' }),
    disposition: z
      .enum(['inline', 'attachment'])
      .optional()
      .openapi({ description: 'Default `inline`. HTML, SVG, XML and other types a browser could run are always `attachment`.' }),
  })
  .strict();

export const downloadUrlSchema = z
  .object({
    url: z.string().openapi({ description: 'Works without a token until `expires_at`: a presigned object-storage GET, or a signed URL of this API.' }),
    expires_at: timestamp,
  })
  .openapi('AssetDownloadUrl');

export const signedFileParams = z.object({ asset_id: uuid.openapi({ description: 'Asset id (uuid).' }) });

export const signedFileQuery = z
  .object({
    user: z.string().min(1).max(200).openapi({ description: 'Who the URL was made for: they must still be able to read the asset.' }),
    // A string rule, not z.coerce: coerce's input is unknown, so the document called the parameter optional (absent → NaN → 400).
    expires: z
      .string()
      .regex(/^\d{1,12}$/, 'must be unix seconds')
      .transform(Number)
      .openapi({ type: 'string', pattern: '^\\d{1,12}$', description: 'Unix seconds after which the URL fails.', example: '1767225600' }),
    disposition: z.enum(['inline', 'attachment']),
    signature: z.string().regex(/^[\w-]{43}$/, 'must be the URL’s signature'),
  })
  .strict();
