import { CHECKED_BY_SERVER, timestamp, uuid, z } from '../../core/zod.ts';
import { assetSchema } from '../schema.ts';

const mediaType = z
  .string()
  .max(255)
  .regex(
    // Letters spelled in both cases rather than a flag: generated clients read the pattern as plain ECMA-262.
    /^[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*\/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*(\s*;\s*[Cc][Hh][Aa][Rr][Ss][Ee][Tt]="?[\w.:-]+"?)?$/,
    'must be a media type like image/png (text may add `; charset=…`)',
  );

export const createUploadBody = z
  .object({
    organization_id: z.string().min(1).max(200),
    filename: z
      .string()
      .min(1)
      .max(255)
      .regex(/^[^/\\\0\r\n]+$/, 'must be a file name without a path')
      .openapi({ description: 'The file’s name; the asset’s title unless `title` is given.' }),
    mime_type: mediaType
      .openapi({
        description:
          'What the file is. The finished bytes must be it: its signature is sniffed, and text (no signature) must decode in its charset (default UTF-8). SVG is refused.',
      })
      .openapi({ [CHECKED_BY_SERVER]: true }),
    size: z.number().int().min(0).openapi({ description: 'Bytes the upload will send (its `Upload-Length`).' }),
    title: z.string().max(500).optional(),
    project_id: uuid
      .optional()
      .openapi({ description: 'File the new asset in this project (caller must be able to edit it).' })
      .openapi({ [CHECKED_BY_SERVER]: true }),
    checksum_sha256: z
      .string()
      .regex(/^[0-9a-f]{64}$/, 'must be 64 lowercase hex digits')
      .optional()
      .openapi({ description: 'SHA-256 of the whole file; the finished upload must hash to it.' }),
  })
  .strict();

export const uploadIdParams = z.object({
  upload_id: z
    .string()
    .regex(/^[0-9a-f]{32}$/, 'must be an upload id (32 hex digits)')
    .openapi({ description: 'Upload id: the last segment of the upload URL.' }),
});

export const uploadSchema = z
  .object({
    id: z.string(),
    asset_id: uuid,
    url: z.string().openapi({ description: 'The tus upload: `PATCH` bytes to it and `HEAD` it for the offset, with the creator’s bearer token.' }),
    size: z.number().int(),
    offset: z.number().int().openapi({ description: 'Bytes received so far (what `HEAD` answers in Upload-Offset).' }),
    state: z.enum(['in_progress', 'completed', 'failed', 'expired', 'canceled']),
    checksum_sha256: z.string().nullable(),
    expires_at: timestamp.openapi({ description: 'An upload unfinished by then is ended (its asset set to `error`) and its bytes removed.' }),
    error: z.object({ code: z.string(), message: z.string() }).nullable().openapi({ description: 'Why the upload ended other than `completed`.' }),
  })
  .openapi('AssetUpload');

export const createdUploadSchema = z.object({ asset: assetSchema, upload: uploadSchema }).openapi('CreatedAssetUpload');

/** The tus request headers of PATCH (documented and checked before the bytes are read). */
export const patchHeaders = z.object({
  'tus-resumable': z.literal('1.0.0').openapi({ description: 'The tus protocol version: `1.0.0`.' }),
  'upload-offset': z
    .string()
    .regex(/^\d+$/, 'must be a byte offset')
    .openapi({ description: 'Where these bytes start: the offset HEAD answered (409 otherwise).' }),
  'content-type': z.literal('application/offset+octet-stream').openapi({ description: 'Always `application/offset+octet-stream`.' }),
  'upload-checksum': z
    .string()
    .regex(/^sha256 [A-Za-z0-9+/]+=*$/, 'must be `sha256 <base64 digest>`')
    .optional()
    .openapi({ description: 'tus checksum extension: `sha256 <base64>` of this request’s bytes; a mismatch answers 460 and keeps none of them.' }),
});

export const tusHeaders = z.object({ 'tus-resumable': z.literal('1.0.0').openapi({ description: 'The tus protocol version: `1.0.0`.' }) });

/** The tus creation request's headers (POST /asset-uploads): the fields are checked by createUploadBody once decoded. */
export const tusCreationHeaders = z.object({
  'tus-resumable': z.literal('1.0.0').openapi({ description: 'The tus protocol version: `1.0.0`.' }),
  'upload-length': z
    .string()
    .regex(/^\d+$/, 'must be the file size in bytes')
    .openapi({ description: 'The file’s size in bytes (`size`): at most Tus-Max-Size.' }),
  'upload-metadata': z.string().max(8192).openapi({
    description:
      'Comma-separated `key base64value` pairs: `organization_id`, `filename`, `filetype` (required), `title`, `project_id`, `checksum_sha256` (optional); other keys are ignored.',
  }),
  'content-type': z
    .literal('application/offset+octet-stream')
    .optional()
    .openapi({ description: 'creation-with-upload: `application/offset+octet-stream` when the body carries the first bytes.' }),
  'upload-checksum': z
    .string()
    .regex(/^sha256 [A-Za-z0-9+/]+=*$/, 'must be `sha256 <base64 digest>`')
    .optional()
    .openapi({ description: 'With a body: `sha256 <base64>` of it (460 and none kept when it does not match).' }),
});
