// What documents and media yield to enrichment, opened inside an extraction thread (./contained.ts):
// each checks the limits a hostile file would exceed before its parser runs. Each parser is loaded
// when its stage runs: a thread started for a PDF loads pdf.js alone.
import { checkPdfStreams } from '../../core/contained/pdf-streams.ts';
import { boundedText, type StageResult, UnreadableAssetError } from '../enrichment.ts';
import type { ContainedStage } from './contained.ts';
import type { ExtractionLimits } from './limits.ts';
import { checkDeclaredSizes } from './media-sizes.ts';
import { checkZip } from './zip.ts';

/** What the extraction thread calls: the stage's reader, on the bytes handed over to it. */
export function extractDocument(stage: ContainedStage, data: Uint8Array, mediaType: string, limits: ExtractionLimits): Promise<StageResult> {
  const bytes = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  switch (stage) {
    case 'pdf':
      return readPdf(bytes, limits);
    case 'docx':
      return readDocx(bytes, limits);
    case 'media':
      return probeMedia(bytes, mediaType);
  }
}

const reason = (error: unknown) => (error instanceof Error ? error.message : String(error));

/** Page count and the text of every page (pages joined by a line break); at most `maxPdfPages` pages, streams inflating to at most the limit. */
export async function readPdf(bytes: Buffer, limits: ExtractionLimits): Promise<StageResult> {
  await checkPdfStreams(bytes, limits);
  const { extractText, getDocumentProxy } = await import('unpdf');
  let pdf: Awaited<ReturnType<typeof getDocumentProxy>>;
  try {
    // A copy: pdf.js takes the array over (detaches it).
    pdf = await getDocumentProxy(new Uint8Array(bytes), { isEvalSupported: false });
  } catch (error) {
    throw new UnreadableAssetError(`the PDF could not be read: ${reason(error)}`);
  }
  try {
    if (pdf.numPages > limits.maxPdfPages) {
      throw new UnreadableAssetError(`the PDF has ${pdf.numPages} pages, more than the ${limits.maxPdfPages} allowed; it was not read`, 'too_many_pages');
    }
    const { totalPages, text } = await extractText(pdf, { mergePages: true });
    const bounded = boundedText(text);
    return { facts: { page_count: totalPages, ...bounded.facts }, text: bounded.text };
  } catch (error) {
    if (error instanceof UnreadableAssetError) throw error;
    throw new UnreadableAssetError(`the PDF's text could not be read: ${reason(error)}`);
  } finally {
    await pdf.destroy();
  }
}

/** The document's text, paragraphs separated by blank lines; its zip checked against the limits first. */
export async function readDocx(bytes: Buffer, limits: ExtractionLimits): Promise<StageResult> {
  await checkZip(bytes, limits);
  const { default: mammoth } = await import('mammoth');
  let value: string;
  try {
    ({ value } = await mammoth.extractRawText({ buffer: bytes }));
  } catch (error) {
    throw new UnreadableAssetError(`the DOCX could not be read: ${reason(error)}`);
  }
  const bounded = boundedText(value.trim());
  return { facts: bounded.facts, text: bounded.text };
}

/** Duration, codec, bitrate (bits per second), container, sample rate and channels of audio or video; absurd size claims refused first. */
export async function probeMedia(bytes: Buffer, mediaType: string): Promise<StageResult> {
  checkDeclaredSizes(bytes);
  const { parseBuffer } = await import('music-metadata');
  let format: Awaited<ReturnType<typeof parseBuffer>>['format'];
  try {
    ({ format } = await parseBuffer(bytes, { mimeType: mediaType, size: bytes.length }, { duration: true, skipCovers: true }));
  } catch (error) {
    throw new UnreadableAssetError(`the ${mediaType.split('/')[0]} could not be read: ${reason(error)}`);
  }
  const facts = {
    duration_seconds: format.duration,
    codec: format.codec,
    bitrate: format.bitrate === undefined ? undefined : Math.round(format.bitrate),
    container: format.container,
    sample_rate: format.sampleRate,
    channels: format.numberOfChannels,
  };
  return { facts: Object.fromEntries(Object.entries(facts).filter(([, value]) => value !== undefined)) };
}
