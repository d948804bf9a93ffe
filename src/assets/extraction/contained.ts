import { runContained } from '../../core/contained/run.ts';
import { FileRefusal } from '../../core/contained/refusal.ts';
import { REFUSAL_CODES, type RefusalCode, type StageResult, UnreadableAssetError } from '../enrichment.ts';
import type { ExtractionLimits } from './limits.ts';

/** The stages whose parsers run in an extraction thread (images decode in libvips, outside the JS heap, under its own pixel limit). */
export type ContainedStage = 'pdf' | 'docx' | 'media';

const documents = new URL('./documents.ts', import.meta.url);
const isRefusal = (code: string | null): code is RefusalCode => (REFUSAL_CODES as readonly (string | null)[]).includes(code);

/**
 * Opens a document or media file in an extraction thread of its own (src/core/contained), under
 * the memory and time ceilings of `limits`; its refusals — a limit the file exceeds, a ceiling the
 * extraction hit — are `UnreadableAssetError`s with their code, anything else a failure to retry.
 */
export async function extractContained(
  stage: ContainedStage,
  bytes: Buffer,
  mediaType: string,
  limits: ExtractionLimits,
  signal: AbortSignal,
): Promise<StageResult> {
  // The thread's own copy, handed over rather than copied again.
  const copy = new Uint8Array(bytes);
  try {
    return await runContained<StageResult>(
      { module: documents, name: 'extractDocument', args: [stage, copy, mediaType, limits], transfer: [copy.buffer] },
      limits,
      signal,
    );
  } catch (error) {
    if (error instanceof FileRefusal) throw isRefusal(error.code) ? new UnreadableAssetError(error.message, error.code) : new Error(error.message);
    throw error;
  }
}
