import type { Config } from '../../config/schema.ts';

/** What opening one file may cost (ASSET_EXTRACTION_* and ASSET_PDF_MAX_PAGES); plain data, so it crosses into the extraction thread. */
export interface ExtractionLimits {
  /** Bytes a zip's entries, or a PDF's streams, may inflate to in all. */
  maxUncompressedBytes: number;
  /** Entries of a zip. */
  maxEntries: number;
  maxPdfPages: number;
  /** CPU time of the extraction thread. */
  cpuMs: number;
  /** Wall-clock time of the extraction, from its start. */
  wallMs: number;
  /** V8 heap plus ArrayBuffers of the extraction thread. */
  memoryMb: number;
}

export function extractionLimits(config: Config): ExtractionLimits {
  return {
    maxUncompressedBytes: config.ASSET_EXTRACTION_MAX_UNCOMPRESSED_BYTES,
    maxEntries: config.ASSET_EXTRACTION_MAX_ENTRIES,
    maxPdfPages: config.ASSET_PDF_MAX_PAGES,
    cpuMs: config.ASSET_EXTRACTION_CPU_SECONDS * 1000,
    wallMs: config.ASSET_EXTRACTION_TIMEOUT_SECONDS * 1000,
    memoryMb: config.ASSET_EXTRACTION_MEMORY_MB,
  };
}
