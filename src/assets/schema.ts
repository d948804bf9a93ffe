import { pageOf, pageQuery } from '../core/pagination.ts';
import { CHECKED_BY_SERVER, jsonValue, jsonValueAtMost, queryBoolean, singleLine, timestamp, userId, uuid, z } from '../core/zod.ts';
import { visibilitySchema, workspaceRoleSchema, writableVisibilitySchema } from '../access/index.ts';

export const assetTypes = ['image', 'video', 'audio', 'document', 'text', 'transcript', '3d'] as const;
export type AssetType = (typeof assetTypes)[number];

const assetType = z.enum(assetTypes);

const jobFailure = z.object({ code: z.string(), message: z.string() });

const thumbnailSchema = z
  .object({
    size: z.number().int().openapi({ description: 'Bound of the longer edge in pixels (256 or 1024); smaller images are not enlarged.' }),
    width: z.number().int(),
    height: z.number().int(),
    media_type: z.literal('image/webp'),
    bytes: z.number().int(),
    path: z.string().openapi({ description: 'API path that serves it to readers: GET /assets/{asset_id}/thumbnails/{size}.' }),
  })
  .openapi('AssetThumbnail');

/** What enrichment measures about an asset's bytes; which fields are present depends on the kind of file. */
const enrichmentSchema = z.object({
  size: z.number().int().openapi({ description: 'Bytes.' }),
  checksum: z.object({ algorithm: z.literal('sha256'), value: z.string() }),
  media_type: z.string(),
  width: z.number().int().optional().openapi({ description: 'Images: pixels, as displayed (EXIF orientation applied).' }),
  height: z.number().int().optional().openapi({ description: 'Images: pixels, as displayed (EXIF orientation applied).' }),
  image_format: z.string().optional().openapi({ description: 'Images: the format read from the bytes (png, jpeg, webp, …).' }),
  orientation: z.number().int().min(1).max(8).optional().openapi({ description: 'Images: the EXIF orientation tag; 1 when there is none.' }),
  thumbnails: z.array(thumbnailSchema).optional().openapi({ description: 'Images: upright WebP thumbnails, 256 and 1024 px on the longer edge.' }),
  page_count: z.number().int().optional().openapi({ description: 'PDF: pages.' }),
  text_length: z
    .number()
    .int()
    .optional()
    .openapi({ description: 'Text, PDF, DOCX: characters (Unicode code points) of the extracted text, which GET /assets?q= searches.' }),
  text_truncated: z.boolean().optional().openapi({ description: 'Present (true) when the extracted text was cut at 1,000,000 characters.' }),
  encoding: z.string().optional().openapi({ description: 'Text: the encoding it was read in: utf-8, utf-16le, utf-16be (byte-order mark) or windows-1252.' }),
  line_count: z.number().int().optional().openapi({ description: 'Text: lines (a final line break ends the last line).' }),
  duration_seconds: z.number().optional().openapi({ description: 'Audio, video: duration.' }),
  codec: z.string().optional().openapi({ description: 'Audio, video: codec (e.g. PCM, MPEG 1 Layer 3, AAC).' }),
  bitrate: z.number().int().optional().openapi({ description: 'Audio, video: bits per second.' }),
  container: z.string().optional().openapi({ description: 'Audio, video: container format (e.g. WAVE, MPEG, M4A/mp42).' }),
  sample_rate: z.number().int().optional().openapi({ description: 'Audio: samples per second.' }),
  channels: z.number().int().optional().openapi({ description: 'Audio: channels.' }),
});

/**
 * Asset, spec 2.2, plus what the jobs learned (`import_error`, `enrichment`, `enrichment_error`):
 * always present, null until a job fills them, so `metadata` is exactly what the user gave.
 */
export const assetSchema = z
  .object({
    id: uuid,
    organization_id: z.string(),
    created_by_id: z.string(),
    type: assetType,
    title: z.string().nullable(),
    mime_type: z.string().nullable(),
    url: z.string().nullable(),
    content: z.string().nullable(),
    upload_file_state: z.enum(['in_progress', 'success', 'error']).nullable(),
    enrichment_state: z.enum(['ignored', 'pending', 'in_progress', 'success', 'error']).nullable(),
    visibility: visibilitySchema,
    workspace_role: workspaceRoleSchema,
    metadata: jsonValue.nullable(),
    generation_id: uuid.nullable(),
    origin_conversation_id: uuid.nullable(),
    origin_canvas_id: uuid.nullable(),
    mod_transcript_id: z.string().nullable(),
    mod_asset_id: z.string().nullable(),
    mod_source_id: z.string().nullable(),
    dual_media_id: z.string().nullable(),
    deleted_at: timestamp.nullable(),
    deleted_by_id: z.string().nullable(),
    created_at: timestamp,
    updated_at: timestamp,
    import_error: jobFailure.nullable().openapi({
      description:
        'Why the link import or upload ended in `error` (`upload_file_state`), e.g. `checksum_mismatch`, `type_mismatch`, `upload_expired`; null otherwise.',
    }),
    enrichment: enrichmentSchema.nullable().openapi({ description: 'What enrichment measured, once `enrichment_state` is `success`; null otherwise.' }),
    enrichment_error: jobFailure.nullable().openapi({
      description:
        'Why enrichment ended in `error`; null otherwise. A file refused for good (never retried; the file still downloads) names the limit it hit: `unreadable`, `file_too_large`, `image_too_large`, `too_large_uncompressed` (a zip or PDF streams inflating past the limit, counted as inflated), `too_many_entries`, `too_many_pages`, `declared_size_exceeds_file`, `extraction_timeout`, `extraction_out_of_memory`; other failures, after their retries, are `enrichment_failed`.',
    }),
  })
  .strict()
  .openapi('Asset');

export const assetIdParams = z.object({ asset_id: uuid.openapi({ description: 'Asset id (uuid).' }) });

const title = singleLine(500);
const mimeType = z
  .string()
  // Letters of both cases spelled out, no `i` flag: the document's `pattern` is the regex source alone, so a flag would be lost (or break generators).
  .regex(/^[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*\/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*$/, 'must be a media type like image/png')
  .max(255);
const httpUrl = z
  .string()
  .max(4096)
  .url()
  .refine((value) => /^https?:\/\//i.test(value), 'must be an http or https URL');
const metadata = jsonValueAtMost(64 * 1024)
  .nullable()
  .openapi({ description: 'Any JSON value, kept and returned exactly as given (at most 64 KiB serialised); jobs never change it.' });

export const createAssetBody = z
  .object({
    organization_id: z.string().min(1).max(200),
    type: assetType,
    title: title.optional(),
    content: z.string().max(1_000_000).optional(),
    url: httpUrl
      .optional()
      .openapi({ description: 'Where the asset lives. Stored as given; the server does not fetch it (use POST /assets/imports/link for that).' }),
    mime_type: mimeType.optional(),
    metadata: metadata.optional(),
    visibility: writableVisibilitySchema.optional().openapi({ description: 'General access; default `private`.' }),
    project_id: uuid
      .optional()
      .openapi({ description: 'File the new asset in this project (caller must be able to edit it).' })
      .openapi({ [CHECKED_BY_SERVER]: true }),
  })
  .strict();

export const updateAssetBody = z
  .object({
    title: title.nullable().optional(),
    content: z.string().max(1_000_000).nullable().optional(),
    mime_type: mimeType.nullable().optional(),
    metadata: metadata.optional().openapi({ description: 'Replaces the whole metadata value.' }),
  })
  .strict()
  .refine((body) => Object.keys(body).length > 0, 'body: give at least one of title, content, mime_type, metadata')
  .openapi({ minProperties: 1 })
  .openapi({ description: 'Sparse: fields left out keep their value. General access changes go through PATCH /access/asset/{id}.' });

export const linkImportBody = z
  .object({
    organization_id: z.string().min(1).max(200),
    url: httpUrl.openapi({ description: 'http(s) URL the worker downloads; private and loopback addresses are refused.' }),
    title: title.optional(),
    project_id: uuid.optional(),
  })
  .strict();

export const listAssetsQuery = z
  .object({
    organization_id: z.string().min(1).max(200),
    type: assetType.optional(),
    project_id: uuid.optional().openapi({ description: 'Only assets filed in this project.' }),
    created_by: userId.optional().openapi({ description: 'User id of the creator.' }),
    search: z.string().trim().min(1).max(200).optional().openapi({ description: 'Case-insensitive substring of the title or content.' }),
    q: z
      .string()
      .trim()
      .min(1)
      .max(200)
      .optional()
      .openapi({
        description:
          'Full-text search of the title and the extracted text (English stemming; words, "quoted phrases", `or`, `-word`). Live assets only; ranked best first (title matches weigh more), each item with `search: {rank, snippet}`. With `deleted=true` it is 400 naming `q` (a rule between two parameters, which OpenAPI cannot declare).',
        [CHECKED_BY_SERVER]: true,
      }),
    deleted: queryBoolean.optional().openapi({ description: '`true`: only deleted assets; default: only live ones.' }),
    ...pageQuery,
  })
  .strict();

/**
 * A list item: the asset, and with `q` how it matched. Built from the asset's fields rather than
 * extending it, so the document shows one closed object (an allOf of two closed objects admits nothing).
 */
export const assetListItemSchema = z
  .object({
    ...assetSchema.shape,
    search: z
      .object({
        rank: z.number().openapi({ description: 'ts_rank of the match; higher is better.' }),
        snippet: z.string().openapi({ description: 'Text around the matches, each in `<mark>…</mark>`; the rest is the text as is (not HTML-escaped).' }),
      })
      .optional()
      .openapi({ description: 'Only with `q`.' }),
  })
  .strict()
  .openapi('AssetListItem');

export const assetPage = pageOf(assetListItemSchema).openapi('AssetPage');

export const thumbnailParams = z.object({
  asset_id: uuid.openapi({ description: 'Asset id (uuid).' }),
  size: z.enum(['256', '1024']).openapi({ description: 'Longer-edge bound of the thumbnail.' }),
});

export const assetModelSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    capabilities: z.array(z.string()).openapi({ description: '`prompt_extraction`, `voice_detection`.' }),
    asset_types: z.array(z.string()).openapi({ description: 'Asset types the model accepts.' }),
  })
  .openapi('AssetModel');
export const assetModelsSchema = z.object({ items: z.array(assetModelSchema), sandbox: z.boolean() }).openapi('AssetModels');

export const voiceSchema = z
  .object({ id: z.string(), name: z.string(), language: z.string().nullable(), first_heard_at: z.number().nullable() })
  .openapi('AssetVoice');
export const voicesSchema = z.object({ asset_id: uuid, items: z.array(voiceSchema), sandbox: z.boolean() }).openapi('AssetVoices');

export const importedParametersSchema = z
  .object({
    asset_id: uuid,
    source_url: z.string(),
    final_url: z.string().nullable(),
    redirects: z.array(z.string()),
    content_type: z.string().nullable(),
    size: z.number().int().nullable(),
    imported_at: timestamp.nullable(),
    state: z.enum(['in_progress', 'success', 'error']),
    error: z.object({ code: z.string(), message: z.string() }).nullable(),
  })
  .openapi('AssetImportedParameters');

export const promptBody = z
  .object({
    model: z
      .string()
      .min(1)
      .max(200)
      .optional()
      .openapi({ description: 'An id from GET /assets/models; default: the first model for the asset type.' })
      .openapi({ [CHECKED_BY_SERVER]: true }),
    instructions: z.string().max(2000).optional(),
  })
  .strict();
export const promptSchema = z.object({ asset_id: uuid, model: z.string(), prompt: z.string(), sandbox: z.boolean() }).openapi('AssetPrompt');
