import { inflatedLength } from './inflate.ts';
import { FileRefusal } from './refusal.ts';

/**
 * Checks what a PDF's Flate streams really inflate to, in all, before pdf.js opens it: each
 * `stream` whose dictionary names FlateDecode is inflated and counted (its declared /Length is not
 * believed). Images are left out: reading text never decodes them. What this cannot see (streams
 * in encrypted files, filters chained inside filters) is bounded by the extraction's CPU and memory
 * ceilings instead. Refused as `too_large_uncompressed`.
 */
export async function checkPdfStreams(bytes: Buffer, limits: { maxUncompressedBytes: number }): Promise<void> {
  let inflated = 0;
  for (let at = bytes.indexOf('stream'); at >= 0; at = bytes.indexOf('stream', at + 6)) {
    let start = at + 6;
    if (bytes[start] === 0x0d) start++;
    if (bytes[start] !== 0x0a || bytes.subarray(at - 3, at).toString('latin1') === 'end') continue;
    start++;
    // The stream's dictionary: from the object that opens it to the keyword.
    const before = bytes.subarray(Math.max(0, at - 4096), at).toString('latin1');
    const dictionary = before.slice(before.lastIndexOf(' obj') + 1);
    const end = bytes.indexOf('endstream', start);
    if (/\/FlateDecode\b|\/Fl\b/.test(dictionary) && !/\/Subtype\s*\/Image\b/.test(dictionary)) {
      inflated += await inflatedLength(bytes.subarray(start, end < 0 ? bytes.length : end), limits.maxUncompressedBytes - inflated, false);
      if (inflated > limits.maxUncompressedBytes) {
        throw new FileRefusal(
          `the PDF is too large uncompressed: its streams inflate to more than the ${limits.maxUncompressedBytes} bytes allowed; it was not opened`,
          'too_large_uncompressed',
        );
      }
    }
    if (end < 0) return;
    at = end + 3; // past the stream's data: its bytes are no keywords
  }
}
