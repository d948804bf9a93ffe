import type { z } from '../core/zod.ts';
import type { assetSchema } from './schema.ts';
import { iso } from '../core/present.ts';
import type { Enrichment, Thumbnail } from './enrichment.ts';

export type Asset = z.input<typeof assetSchema>;

/** An `assets` row as stored (internal columns included). */
export interface AssetRow {
  id: string;
  organization_id: string;
  created_by_id: string;
  type: Asset['type'];
  title: string | null;
  mime_type: string | null;
  url: string | null;
  content: string | null;
  upload_file_state: Asset['upload_file_state'];
  enrichment_state: Asset['enrichment_state'];
  visibility: Asset['visibility'];
  workspace_role: Asset['workspace_role'];
  metadata: unknown;
  generation_id: string | null;
  origin_conversation_id: string | null;
  origin_canvas_id: string | null;
  mod_transcript_id: string | null;
  mod_asset_id: string | null;
  mod_source_id: string | null;
  dual_media_id: string | null;
  import_parameters: ImportParameters | null;
  import_error: JobFailure | null;
  enrichment: Enrichment | null;
  enrichment_error: JobFailure | null;
  deleted_at: Date | null;
  deleted_by_id: string | null;
  created_at: Date;
  updated_at: Date;
}

/** Why a link import or an enrichment ended in `error` (columns `import_error`, `enrichment_error`). */
export interface JobFailure {
  code: string;
  message: string;
}

/** What a link import learned about its source (column `import_parameters`). */
export interface ImportParameters {
  source_url: string;
  final_url: string | null;
  redirects: string[];
  content_type: string | null;
  size: number | null;
  imported_at: string | null;
  error: JobFailure | null;
}

/** The columns of spec 2.2, in order: selected for responses (internal columns stay inside). */
export const assetColumns = [
  'id',
  'organization_id',
  'created_by_id',
  'type',
  'title',
  'mime_type',
  'url',
  'content',
  'upload_file_state',
  'enrichment_state',
  'visibility',
  'workspace_role',
  'metadata',
  'generation_id',
  'origin_conversation_id',
  'origin_canvas_id',
  'mod_transcript_id',
  'mod_asset_id',
  'mod_source_id',
  'dual_media_id',
  'deleted_at',
  'deleted_by_id',
  'created_at',
  'updated_at',
  // What the import and enrichment jobs learned: fields of their own, so `metadata` stays the user's.
  'import_error',
  'enrichment',
  'enrichment_error',
] as const;

export function presentAsset(row: AssetRow): Asset {
  return {
    id: row.id,
    organization_id: row.organization_id,
    created_by_id: row.created_by_id,
    type: row.type,
    title: row.title,
    mime_type: row.mime_type,
    url: row.url,
    content: row.content,
    upload_file_state: row.upload_file_state,
    enrichment_state: row.enrichment_state,
    visibility: row.visibility,
    workspace_role: row.workspace_role,
    metadata: row.metadata ?? null,
    generation_id: row.generation_id,
    origin_conversation_id: row.origin_conversation_id,
    origin_canvas_id: row.origin_canvas_id,
    mod_transcript_id: row.mod_transcript_id,
    mod_asset_id: row.mod_asset_id,
    mod_source_id: row.mod_source_id,
    dual_media_id: row.dual_media_id,
    deleted_at: iso(row.deleted_at),
    deleted_by_id: row.deleted_by_id,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
    import_error: row.import_error ?? null,
    enrichment: presentEnrichment(row),
    enrichment_error: row.enrichment_error ?? null,
  };
}

/** What enrichment recorded, each thumbnail with the path that serves it. */
function presentEnrichment(row: AssetRow): Asset['enrichment'] {
  if (!row.enrichment) return null;
  const { thumbnails, ...facts } = row.enrichment;
  return { ...facts, ...(thumbnails && { thumbnails: thumbnails.map((thumbnail) => presentThumbnail(row.id, thumbnail)) }) };
}

/** Where readers download an imported file (served by GET /assets/{asset_id}/file). */
export const assetFileUrl = (id: string) => `/assets/${id}/file`;
/** Object-storage key of an asset's file: derived from the id, so a retried import overwrites, never duplicates. */
export const assetFileKey = (organizationId: string, id: string) => `assets/${organizationId}/${id}/file`;

/**
 * Object-storage key of one of an image asset's thumbnails: derived from the asset and the size,
 * so a retried enrichment overwrites, never duplicates. A signed download of a thumbnail signs
 * this key (or the path below), exactly like the asset's own file.
 */
export const assetThumbnailKey = (organizationId: string, id: string, size: number) => `assets/${organizationId}/${id}/thumbnails/${size}.webp`;

/** Where readers get a thumbnail (served by GET /assets/{asset_id}/thumbnails/{size}). */
export const assetThumbnailPath = (id: string, size: number) => `/assets/${id}/thumbnails/${size}`;

/** A thumbnail as the API shows it: what enrichment recorded, and the path that serves it. */
export const presentThumbnail = (assetId: string, thumbnail: Thumbnail) => ({ ...thumbnail, path: assetThumbnailPath(assetId, thumbnail.size) });
