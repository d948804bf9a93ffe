import { imageSize } from 'image-size';
import type { GeneratedFile, GenerationKind } from './types.ts';
import { wavDurationMs } from './wav.ts';

interface Format {
  contentType: string;
  extension: string;
  kinds: GenerationKind[];
  test: (b: Buffer) => boolean;
}

const ascii = (b: Buffer, at: number, text: string) => b.length >= at + text.length && b.toString('latin1', at, at + text.length) === text;

/** The formats a generation may come back in, recognised by their magic bytes. A GIF counts as video too (the sandbox's stand-in). */
const formats: Format[] = [
  { contentType: 'image/png', extension: 'png', kinds: ['image'], test: (b) => ascii(b, 0, '\x89PNG\r\n\x1a\n') },
  { contentType: 'image/jpeg', extension: 'jpg', kinds: ['image'], test: (b) => b.length > 3 && b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff },
  { contentType: 'image/webp', extension: 'webp', kinds: ['image'], test: (b) => ascii(b, 0, 'RIFF') && ascii(b, 8, 'WEBP') },
  { contentType: 'image/gif', extension: 'gif', kinds: ['image', 'video'], test: (b) => ascii(b, 0, 'GIF87a') || ascii(b, 0, 'GIF89a') },
  { contentType: 'audio/wav', extension: 'wav', kinds: ['audio'], test: (b) => ascii(b, 0, 'RIFF') && ascii(b, 8, 'WAVE') },
  {
    contentType: 'audio/mpeg',
    extension: 'mp3',
    kinds: ['audio'],
    test: (b) => ascii(b, 0, 'ID3') || (b.length > 2 && b[0] === 0xff && (b[1]! & 0xe0) === 0xe0),
  },
  { contentType: 'audio/ogg', extension: 'ogg', kinds: ['audio'], test: (b) => ascii(b, 0, 'OggS') },
  { contentType: 'audio/flac', extension: 'flac', kinds: ['audio'], test: (b) => ascii(b, 0, 'fLaC') },
  { contentType: 'video/mp4', extension: 'mp4', kinds: ['video'], test: (b) => ascii(b, 4, 'ftyp') },
  { contentType: 'video/webm', extension: 'webm', kinds: ['video'], test: (b) => b.length > 4 && b.readUInt32BE(0) === 0x1a45dfa3 },
];

/**
 * The bytes as a file of `kind`, its type taken from the bytes themselves (an upstream's
 * content-type is only a claim); null when they are not a format of that kind.
 */
export function sniffFile(bytes: Buffer, kind: GenerationKind): GeneratedFile | null {
  const format = formats.find((f) => f.kinds.includes(kind) && f.test(bytes));
  if (!format) return null;
  const file: GeneratedFile = { contentType: format.contentType, extension: format.extension, bytes };
  if (format.contentType.startsWith('image/')) {
    try {
      const size = imageSize(bytes);
      file.width = size.width;
      file.height = size.height;
    } catch {
      return null; // the magic bytes of an image, but not a readable one
    }
  }
  if (format.extension === 'wav') {
    const durationMs = wavDurationMs(bytes);
    if (durationMs === null) return null;
    file.durationMs = durationMs;
  }
  return file;
}
