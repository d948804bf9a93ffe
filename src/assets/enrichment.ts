import { createHash } from 'node:crypto';
import { imageSize } from 'image-size';

/** What enrichment learns about an asset's bytes (kept in the column `enrichment`). */
export interface Enrichment {
  size: number;
  checksum: { algorithm: 'sha256'; value: string };
  media_type: string;
  width?: number;
  height?: number;
  image_format?: string;
  /** Characters (Unicode code points) of text content. */
  text_length?: number;
}

export class UnreadableAssetError extends Error {}

const textual = (type: string, mediaType: string) => ['text', 'transcript'].includes(type) || mediaType.startsWith('text/') || mediaType === 'application/json';

export function enrich(bytes: Buffer, assetType: string, mediaType: string): Enrichment {
  const result: Enrichment = {
    size: bytes.length,
    checksum: { algorithm: 'sha256', value: createHash('sha256').update(bytes).digest('hex') },
    media_type: mediaType,
  };
  if (assetType === 'image') {
    try {
      const dimensions = imageSize(bytes);
      result.width = dimensions.width;
      result.height = dimensions.height;
      if (dimensions.type) result.image_format = dimensions.type;
    } catch (error) {
      throw new UnreadableAssetError(`the image could not be read: ${(error as Error).message}`);
    }
  }
  if (textual(assetType, mediaType)) result.text_length = [...bytes.toString('utf8')].length;
  return result;
}
