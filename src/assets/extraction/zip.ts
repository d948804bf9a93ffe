import { UnreadableAssetError } from '../enrichment.ts';
import { inflatedLength } from '../../core/contained/inflate.ts';
import type { ExtractionLimits } from './limits.ts';

const END = 0x06054b50;
const END64_LOCATOR = 0x07064b50;
const END64 = 0x06064b50;
const CENTRAL = 0x02014b50;
const LOCAL = 0x04034b50;
const MAX32 = 0xffffffff;

const unreadable = (what: string) => new UnreadableAssetError(`the archive could not be read: ${what}`);

interface CentralEntry {
  method: number;
  compressedSize: number;
  declaredSize: number;
  localOffset: number;
}

/**
 * Checks a zip-based document (DOCX, and any OOXML/ODF/EPUB) against the limits before anything
 * parses it: the entries of its central directory (counted as they are read, not as the end
 * record claims) and the bytes they really inflate to — each entry's data, as the parser would
 * read it, inflated and counted — so headers that lie about sizes change nothing.
 */
export async function checkZip(bytes: Buffer, limits: ExtractionLimits): Promise<void> {
  const entries = centralDirectory(bytes, limits.maxEntries);
  let declared = 0;
  for (const entry of entries) declared += entry.declaredSize;
  if (declared > limits.maxUncompressedBytes) throw tooLarge(`its entries declare ${declared} bytes`, limits);
  let inflated = 0;
  for (const entry of entries) {
    const data = entryData(bytes, entry);
    if (entry.method === 0) inflated += data.length;
    else if (entry.method === 8) inflated += await inflatedLength(data, limits.maxUncompressedBytes - inflated);
    else throw unreadable(`compression method ${entry.method} is not supported`);
    if (inflated > limits.maxUncompressedBytes) throw tooLarge('its entries inflate to more', limits);
  }
}

const tooLarge = (what: string, limits: ExtractionLimits) =>
  new UnreadableAssetError(
    `the archive is too large uncompressed: ${what} than the ${limits.maxUncompressedBytes} bytes allowed; it was not opened`,
    'too_large_uncompressed',
  );

function centralDirectory(bytes: Buffer, maxEntries: number): CentralEntry[] {
  const end = bytes.lastIndexOf(Buffer.from([0x50, 0x4b, 0x05, 0x06]), bytes.length - 22);
  if (end < 0 || end < bytes.length - 22 - 0xffff) throw unreadable('it has no end of central directory record');
  let offset = bytes.readUInt32LE(end + 16);
  if (bytes.readUInt32LE(end) !== END) throw unreadable('its end record is broken');
  // ZIP64: the offset lives in the ZIP64 end record the locator points at.
  if (offset === MAX32 && end >= 20 && bytes.readUInt32LE(end - 20) === END64_LOCATOR) {
    const end64 = Number(bytes.readBigUInt64LE(end - 20 + 8));
    if (end64 + 56 > bytes.length || bytes.readUInt32LE(end64) !== END64) throw unreadable('its ZIP64 end record is broken');
    offset = Number(bytes.readBigUInt64LE(end64 + 48));
  }
  const entries: CentralEntry[] = [];
  while (offset + 46 <= bytes.length && bytes.readUInt32LE(offset) === CENTRAL) {
    if (entries.length === maxEntries) {
      throw new UnreadableAssetError(`the archive has more than the ${maxEntries} entries allowed; it was not opened`, 'too_many_entries');
    }
    const nameLength = bytes.readUInt16LE(offset + 28);
    const extraLength = bytes.readUInt16LE(offset + 30);
    const commentLength = bytes.readUInt16LE(offset + 32);
    const entry = {
      method: bytes.readUInt16LE(offset + 10),
      compressedSize: bytes.readUInt32LE(offset + 20),
      declaredSize: bytes.readUInt32LE(offset + 24),
      localOffset: bytes.readUInt32LE(offset + 42),
    };
    readZip64Extra(bytes.subarray(offset + 46 + nameLength, offset + 46 + nameLength + extraLength), entry);
    entries.push(entry);
    offset += 46 + nameLength + extraLength + commentLength;
  }
  return entries;
}

/** The ZIP64 extra field (0x0001) holds, in order, the 64-bit values whose 32-bit fields are all ones. */
function readZip64Extra(extra: Buffer, entry: CentralEntry): void {
  for (let at = 0; at + 4 <= extra.length; ) {
    const id = extra.readUInt16LE(at);
    const size = extra.readUInt16LE(at + 2);
    if (id === 0x0001) {
      let field = at + 4;
      const next = () => {
        if (field + 8 > at + 4 + size || field + 8 > extra.length) throw unreadable('its ZIP64 extra field is broken');
        const value = Number(extra.readBigUInt64LE(field));
        field += 8;
        return value;
      };
      if (entry.declaredSize === MAX32) entry.declaredSize = next();
      if (entry.compressedSize === MAX32) entry.compressedSize = next();
      if (entry.localOffset === MAX32) entry.localOffset = next();
      return;
    }
    at += 4 + size;
  }
}

/** The entry's stored bytes: after its local header, as long as the central directory says (what a parser reads). */
function entryData(bytes: Buffer, entry: CentralEntry): Buffer {
  const at = entry.localOffset;
  if (at + 30 > bytes.length || bytes.readUInt32LE(at) !== LOCAL) throw unreadable('an entry has no local header');
  const start = at + 30 + bytes.readUInt16LE(at + 26) + bytes.readUInt16LE(at + 28);
  return bytes.subarray(start, Math.min(bytes.length, start + entry.compressedSize));
}
