// What images and text yield to enrichment: pure functions of the bytes (worker only; the
// libraries are loaded here and nowhere in the web process). Documents and media are opened in an
// extraction thread of their own (./extraction/).
import sharp, { type Metadata } from 'sharp';
import { boundedText, type StageResult, type Thumbnail, UnreadableAssetError } from './enrichment.ts';

// A worker fits 512 MB: each image is decoded once, so libvips' operation cache (50 MB by
// default) only held memory, and one libvips thread per image keeps its buffers to one set while
// the worker's slots give the parallelism (docs/deployment.md, "Memory on a 512 MB dyno").
sharp.cache(false);
sharp.concurrency(1);

/** Longer-edge bounds of the thumbnails every image gets. */
export const THUMBNAIL_SIZES = [256, 1024] as const;

const reason = (error: unknown) => (error instanceof Error ? error.message : String(error));

/**
 * Dimensions (as displayed: EXIF orientation applied), orientation and format, from the header
 * alone. An image of more than `maxPixels` pixels is refused here, before anything decodes it: a
 * small file can claim billions of pixels (a decompression bomb).
 */
export async function probeImage(bytes: Buffer, maxPixels: number): Promise<StageResult> {
  let meta: Metadata;
  try {
    // Header only, no decode: the pixel limit is ours to check just below, with a clear message.
    meta = await sharp(bytes, { limitInputPixels: false }).metadata();
  } catch (error) {
    throw new UnreadableAssetError(`the image could not be read: ${reason(error)}`);
  }
  const pixels = meta.width * meta.height;
  if (!(pixels > 0)) throw new UnreadableAssetError('the image could not be read: it has no pixels');
  if (pixels > maxPixels) {
    throw new UnreadableAssetError(
      `the image is ${meta.width}×${meta.height} (${pixels} pixels), more than the ${maxPixels} allowed; it was not decoded`,
      'image_too_large',
    );
  }
  return { facts: { width: meta.autoOrient.width, height: meta.autoOrient.height, image_format: meta.format, orientation: meta.orientation ?? 1 } };
}

/**
 * WebP thumbnails, upright (EXIF orientation applied), within THUMBNAIL_SIZES, never enlarged.
 * The image is decoded once, at the largest thumbnail's size (JPEG shrinks while it decodes); the
 * smaller ones are made from that.
 */
export async function renderThumbnails(bytes: Buffer, maxPixels: number, timeoutSeconds = 0): Promise<{ thumbnail: Thumbnail; body: Buffer }[]> {
  const largest = Math.max(...THUMBNAIL_SIZES);
  try {
    const { data, info } = await sharp(bytes, { limitInputPixels: maxPixels })
      // libvips stops decoding past this (0: never); the pixel limit bounds its memory.
      .timeout({ seconds: Math.ceil(timeoutSeconds) })
      .autoOrient()
      .resize({ width: largest, height: largest, fit: 'inside', withoutEnlargement: true })
      .raw()
      .toBuffer({ resolveWithObject: true });
    const raw = { raw: { width: info.width, height: info.height, channels: info.channels } };
    const sizes = [...THUMBNAIL_SIZES].sort((a, b) => a - b);
    // A size the image already fits in at the next smaller size is that rendition again: encoded
    // once, and its file serves both (thumbnailFileSize).
    const longer = Math.max(info.width, info.height);
    const encoded = await Promise.all(
      sizes
        .filter((_, i) => i === 0 || sizes[i - 1]! < longer)
        .map(async (size) => {
          const { data: body, info: out } = await sharp(data, raw)
            .resize({ width: size, height: size, fit: 'inside', withoutEnlargement: true })
            .webp({ quality: 80 })
            .toBuffer({ resolveWithObject: true });
          return { thumbnail: { size, width: out.width, height: out.height, media_type: 'image/webp' as const, bytes: body.length }, body };
        }),
    );
    return sizes.map((size) => {
      const rendition = encoded.findLast((candidate) => candidate.thumbnail.size <= size)!;
      return { thumbnail: { ...rendition.thumbnail, size }, body: rendition.body };
    });
  } catch (error) {
    if (/^timeout: /.test(reason(error)))
      throw new UnreadableAssetError(`decoding the image took more than ${timeoutSeconds} s; it was stopped`, 'extraction_timeout');
    throw new UnreadableAssetError(`the image could not be decoded: ${reason(error)}`);
  }
}

/**
 * The encoding (a byte-order mark, else UTF-8 when the bytes are valid UTF-8, else Windows-1252,
 * which decodes any byte), the number of lines (a final line break ends the last line, it does not
 * start another), and the text itself.
 */
export function readText(bytes: Buffer): StageResult {
  const { encoding, text } = decode(bytes);
  const lines = text === '' ? 0 : text.split(/\r\n|\r|\n/).length - (/(\r\n|\r|\n)$/.test(text) ? 1 : 0);
  const bounded = boundedText(text);
  return { facts: { encoding, line_count: lines, ...bounded.facts }, text: bounded.text };
}

function decode(bytes: Buffer): { encoding: string; text: string } {
  const boms: [number[], string][] = [
    [[0xef, 0xbb, 0xbf], 'utf-8'],
    [[0xff, 0xfe], 'utf-16le'],
    [[0xfe, 0xff], 'utf-16be'],
  ];
  for (const [bom, encoding] of boms) {
    if (bom.every((byte, i) => bytes[i] === byte)) return { encoding, text: new TextDecoder(encoding, { ignoreBOM: true }).decode(bytes.subarray(bom.length)) };
  }
  try {
    return { encoding: 'utf-8', text: new TextDecoder('utf-8', { fatal: true }).decode(bytes) };
  } catch {
    return { encoding: 'windows-1252', text: new TextDecoder('windows-1252').decode(bytes) };
  }
}
