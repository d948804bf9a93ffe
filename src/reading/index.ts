import type { Config } from '../config/schema.ts';
import { fetchPage, type FetchPageOptions } from './fetch.ts';
import { readHtml } from './html.ts';
import { composeResult, READ_MAX_TEXT_CHARS, type ReadUrlResult } from './result.ts';
import { decodeBody, readPlainText } from './text.ts';

export { READ_MAX_BYTES, readableMediaTypes } from './fetch.ts';
export { READ_MAX_LINKS, READ_MAX_TEXT_CHARS, type ReadUrlResult } from './result.ts';

export interface ReadUrlOptions extends FetchPageOptions {
  config: FetchPageOptions['config'] &
    Pick<
      Config,
      'ASSET_EXTRACTION_MAX_UNCOMPRESSED_BYTES' | 'ASSET_EXTRACTION_CPU_SECONDS' | 'ASSET_EXTRACTION_TIMEOUT_SECONDS' | 'ASSET_EXTRACTION_MEMORY_MB'
    >;
  /** Most characters of text returned (default READ_MAX_TEXT_CHARS); longer text is cut and `truncated`. */
  maxTextChars?: number;
}

/**
 * Fetches a user-supplied URL through the SSRF guard and returns its readable text and metadata.
 * Throws `ReadFailure`: `refused` for URLs the address policy blocks, unreadable content types,
 * bodies over the size cap and unparsable PDFs; `timeout` past READ_TIMEOUT_MS; `failed` for
 * upstream errors (4xx/5xx, DNS, connection, redirect loops).
 */
export async function readUrl(url: string, options: ReadUrlOptions): Promise<ReadUrlResult> {
  const maxTextChars = options.maxTextChars ?? READ_MAX_TEXT_CHARS;
  const page = await fetchPage(url, options);
  const meta = { url, final_url: page.finalUrl, content_type: page.contentType };
  switch (page.contentType) {
    case 'application/pdf': {
      // pdf.js is large: loaded on the first PDF, not with the module.
      const { readPdf } = await import('./pdf.ts');
      const { config } = options;
      const limits = {
        maxUncompressedBytes: config.ASSET_EXTRACTION_MAX_UNCOMPRESSED_BYTES,
        cpuMs: config.ASSET_EXTRACTION_CPU_SECONDS * 1000,
        wallMs: config.ASSET_EXTRACTION_TIMEOUT_SECONDS * 1000,
        memoryMb: config.ASSET_EXTRACTION_MEMORY_MB,
      };
      return composeResult(meta, await readPdf(page.body, options.signal, maxTextChars, limits), maxTextChars);
    }
    case 'text/html':
    case 'application/xhtml+xml':
      return composeResult(meta, readHtml(decodeBody(page.body, page.contentTypeHeader, true), page.finalUrl), maxTextChars);
    case 'text/markdown':
    case 'text/x-markdown':
    case 'text/plain':
      return composeResult(meta, readPlainText(decodeBody(page.body, page.contentTypeHeader, false), page.contentType !== 'text/plain'), maxTextChars);
  }
}
