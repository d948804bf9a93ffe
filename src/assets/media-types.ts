import type { AssetType } from './schema.ts';

/** Media types a link import accepts, and the asset type each becomes. Anything else is refused. */
const exact: Record<string, AssetType> = {
  'text/plain': 'text',
  'text/markdown': 'text',
  'text/csv': 'document',
  'text/html': 'document',
  'application/pdf': 'document',
  'application/json': 'document',
  'application/msword': 'document',
  'application/vnd.openxmlformats-officedocument.wordprocessingml.document': 'document',
  'application/vnd.openxmlformats-officedocument.presentationml.presentation': 'document',
  'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet': 'document',
  'text/vtt': 'transcript',
  'application/x-subrip': 'transcript',
  'model/gltf-binary': '3d',
  'model/gltf+json': '3d',
  'model/obj': '3d',
  'model/stl': '3d',
};

// SVG is refused: served back from our origin it could carry script.
const refused = new Set(['image/svg+xml']);

export function assetTypeOf(mediaType: string): AssetType | null {
  if (refused.has(mediaType)) return null;
  if (exact[mediaType]) return exact[mediaType];
  for (const family of ['image', 'video', 'audio'] as const) if (mediaType.startsWith(`${family}/`)) return family;
  return null;
}

export const isImportableMediaType = (mediaType: string) => assetTypeOf(mediaType) !== null;

/** A first guess from the URL's extension, shown while the import runs (the worker corrects it). */
export function guessTypeFromUrl(url: string): AssetType {
  const extension = new URL(url).pathname.split('.').pop()?.toLowerCase() ?? '';
  if (['png', 'jpg', 'jpeg', 'gif', 'webp', 'avif', 'bmp', 'tiff'].includes(extension)) return 'image';
  if (['mp4', 'mov', 'webm', 'mkv', 'avi'].includes(extension)) return 'video';
  if (['mp3', 'wav', 'ogg', 'flac', 'm4a', 'aac'].includes(extension)) return 'audio';
  if (['txt', 'md'].includes(extension)) return 'text';
  if (['vtt', 'srt'].includes(extension)) return 'transcript';
  if (['glb', 'gltf', 'obj', 'stl'].includes(extension)) return '3d';
  return 'document';
}

/** Title for an import without one: the last path segment, else the host. */
export function titleFromUrl(url: string): string {
  const parsed = new URL(url);
  const segment = parsed.pathname.split('/').filter(Boolean).pop() ?? '';
  let last = segment;
  try {
    last = decodeURIComponent(segment);
  } catch {
    // keep the raw segment when it is not valid percent-encoding
  }
  return (last || parsed.hostname).slice(0, 500);
}
