import { createHash } from 'node:crypto';

/** A WebP rendition of an image asset, stored next to its file (./thumbnails.ts). */
export interface Thumbnail {
  /** The bound of its longer edge in pixels (one of THUMBNAIL_SIZES); a smaller image is not enlarged. */
  size: number;
  width: number;
  height: number;
  media_type: 'image/webp';
  bytes: number;
}

/**
 * The size whose file holds the rendition of `size`: the smallest recorded thumbnail of the same
 * dimensions (an image that fits in 256 px is stored once and served for 1024 too).
 */
export function thumbnailFileSize(thumbnails: readonly Thumbnail[], size: number): number | undefined {
  const wanted = thumbnails.find((thumbnail) => thumbnail.size === size);
  if (!wanted) return undefined;
  return Math.min(...thumbnails.filter((t) => t.width === wanted.width && t.height === wanted.height).map((t) => t.size));
}

/** What enrichment learns about an asset's bytes (kept in the column `enrichment`). */
export interface Enrichment {
  size: number;
  checksum: { algorithm: 'sha256'; value: string };
  media_type: string;
  /** Images: as displayed, i.e. with the EXIF orientation applied. */
  width?: number;
  height?: number;
  image_format?: string;
  /** Images: the EXIF orientation tag (1–8), 1 when the image has none. */
  orientation?: number;
  thumbnails?: Thumbnail[];
  /** PDF. */
  page_count?: number;
  /** Characters (Unicode code points) of the extracted text (text, PDF, DOCX). */
  text_length?: number;
  /** True when the extracted text was cut at MAX_EXTRACTED_TEXT characters. */
  text_truncated?: boolean;
  /** Text: the character encoding the bytes were read in, and their lines. */
  encoding?: string;
  line_count?: number;
  /** Audio and video. */
  duration_seconds?: number;
  codec?: string;
  bitrate?: number;
  container?: string;
  sample_rate?: number;
  channels?: number;
}

/** The stages of an asset's enrichment; each is recorded when done (./enrichment-stages.ts). */
export type StageName = 'image' | 'thumbnails' | 'pdf' | 'docx' | 'media' | 'text';

/** What a stage found: facts merged into the enrichment, and the text it read, if any. */
export interface StageResult {
  facts: Partial<Enrichment>;
  text?: string;
}

/**
 * Why enrichment refused a file for good, as `enrichment_error.code`: unreadable bytes, or a limit
 * a hostile file would exceed (./extraction/limits.ts) — the file's own size, decompressed size, entries, pages, pixels,
 * sizes its headers claim, and the time and memory ceilings of the extraction.
 */
export const REFUSAL_CODES = [
  'unreadable',
  'file_too_large',
  'image_too_large',
  'too_large_uncompressed',
  'too_many_entries',
  'too_many_pages',
  'declared_size_exceeds_file',
  'extraction_timeout',
  'extraction_out_of_memory',
] as const;
export type RefusalCode = (typeof REFUSAL_CODES)[number];

/** The bytes cannot be enriched (not what they claim, or refused, e.g. a decompression bomb): no retry. */
export class UnreadableAssetError extends Error {
  readonly code: RefusalCode;
  constructor(message: string, code: RefusalCode = 'unreadable') {
    super(message);
    this.code = code;
  }
}

/** Extracted text beyond this many characters is cut (and `text_truncated` says so). */
export const MAX_EXTRACTED_TEXT = 1_000_000;

const DOCX = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';
const textual = (type: string, mediaType: string) => ['text', 'transcript'].includes(type) || mediaType.startsWith('text/') || mediaType === 'application/json';

/** Which stages an asset's bytes go through, in order: chosen by the media type, the asset type for inline text. */
export function stagesFor(assetType: string, declared: string): StageName[] {
  // `text/plain; charset=utf-8` is text/plain: parameters do not change the kind.
  const mediaType = declared.split(';')[0]!.trim().toLowerCase();
  if (mediaType.startsWith('image/') || (assetType === 'image' && !textual(assetType, mediaType))) return ['image', 'thumbnails'];
  if (mediaType === 'application/pdf') return ['pdf'];
  if (mediaType === DOCX) return ['docx'];
  if (mediaType.startsWith('audio/') || mediaType.startsWith('video/') || assetType === 'audio' || assetType === 'video') return ['media'];
  if (textual(assetType, mediaType)) return ['text'];
  return [];
}

/** What every asset's bytes tell without reading them as anything: size and sha256. */
export function basics(bytes: Buffer, mediaType: string): Enrichment {
  return { size: bytes.length, checksum: { algorithm: 'sha256', value: createHash('sha256').update(bytes).digest('hex') }, media_type: mediaType };
}

const codePoints = (text: string) => {
  let count = 0;
  for (const _ of text) count++;
  return count;
};

/** Cuts text at MAX_EXTRACTED_TEXT code points, saying whether it did. */
export function boundedText(text: string): { text: string; facts: Pick<Enrichment, 'text_length' | 'text_truncated'> } {
  // UTF-16 units bound code points from above: a text this short needs no cut.
  if (text.length <= MAX_EXTRACTED_TEXT) return { text, facts: { text_length: codePoints(text) } };
  const points = [...text];
  if (points.length <= MAX_EXTRACTED_TEXT) return { text, facts: { text_length: points.length } };
  return { text: points.slice(0, MAX_EXTRACTED_TEXT).join(''), facts: { text_length: MAX_EXTRACTED_TEXT, text_truncated: true } };
}
