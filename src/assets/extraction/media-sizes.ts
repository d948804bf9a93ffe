import { UnreadableAssetError } from '../enrichment.ts';

/** A claim this far past the end of the file is a lie, not a file cut a little short or a writer's rounding. */
const absurd = (claimedEnd: number, length: number) => claimedEnd > 2 * length + 1024 * 1024;

const refuse = (container: string, claimedEnd: number, length: number) =>
  new UnreadableAssetError(
    `the ${container} claims ${claimedEnd} bytes but the file has ${length}; its headers were not believed and it was not opened`,
    'declared_size_exceeds_file',
  );

/**
 * Refuses media whose container headers claim far more bytes than the file holds (a WAV of "4 GB"
 * in a few bytes, MP4 boxes of 2^62 bytes): parsers size their reads and buffers from those
 * claims. RIFF (WAV, AVI) chunks and ISO-BMFF (MP4, MOV, M4A) top-level boxes are walked;
 * the sizes meaning "unknown, to the end" (a stream being written) are accepted.
 */
export function checkDeclaredSizes(bytes: Buffer): void {
  const tag = (at: number) => bytes.subarray(at, at + 4).toString('latin1');
  // Past the last real chunk or box (padding, trailing bytes): nothing more is claimed.
  const named = (at: number) => /^[\x20-\x7e]{4}$/.test(tag(at));
  if (bytes.length >= 12 && tag(0) === 'RIFF') {
    const riff = bytes.readUInt32LE(4);
    if (riff !== 0 && riff !== 0xffffffff && absurd(riff + 8, bytes.length)) throw refuse('RIFF file', riff + 8, bytes.length);
    for (let at = 12; at + 8 <= bytes.length && named(at); ) {
      const size = bytes.readUInt32LE(at + 4);
      if (size === 0xffffffff) return;
      if (absurd(at + 8 + size, bytes.length)) throw refuse(`RIFF chunk '${tag(at)}'`, at + 8 + size, bytes.length);
      at += 8 + size + (size % 2);
    }
    return;
  }
  if (bytes.length >= 8 && tag(4) === 'ftyp') {
    for (let at = 0; at + 8 <= bytes.length && named(at + 4); ) {
      let size = bytes.readUInt32BE(at);
      if (size === 0) return; // to the end of the file
      if (size === 1) {
        if (at + 16 > bytes.length) return;
        size = Number(bytes.readBigUInt64BE(at + 8));
      }
      if (size < 8) return; // broken, not a claim: the parser refuses it
      if (absurd(at + size, bytes.length)) throw refuse(`MP4 box '${tag(at + 4)}'`, at + size, bytes.length);
      at += size;
    }
  }
}
