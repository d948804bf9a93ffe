import { type Ceilings, runContained } from '../core/contained/run.ts';
import { FileRefusal } from '../core/contained/refusal.ts';
import { ReadFailure } from '../core/read-failure.ts';
import type { PageContent } from './result.ts';

const pdfText = new URL('./pdf-text.ts', import.meta.url);

/** What opening a fetched PDF may cost (the ASSET_EXTRACTION_* ceilings enrichment uses). */
export interface PdfLimits extends Ceilings {
  maxUncompressedBytes: number;
}

/**
 * A fetched PDF's text and metadata (./pdf-text.ts), read in an extraction thread of its own under
 * `limits`: a PDF that inflates past them, exhausts a ceiling or cannot be parsed (broken,
 * encrypted) is refused — it is not a readable page — and the process serving the read is untouched.
 */
export async function readPdf(body: Buffer, signal: AbortSignal, maxChars: number, limits: PdfLimits): Promise<PageContent> {
  const copy = new Uint8Array(body);
  try {
    return await runContained<PageContent>(
      { module: pdfText, name: 'readPdfText', args: [copy, maxChars, limits.maxUncompressedBytes], transfer: [copy.buffer] },
      limits,
      signal,
    );
  } catch (error) {
    if (signal.aborted) throw signal.reason;
    if (error instanceof FileRefusal) throw new ReadFailure('refused', error.message, { cause: error });
    throw error;
  }
}
