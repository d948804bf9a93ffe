import type { Config } from '../config/schema.ts';
import { ReadFailure, type ReadFailureKind } from '../core/read-failure.ts';
import { parseAllowlist } from '../net/address-policy.ts';
import { OutboundFetchError, type OutboundFailureCode } from '../net/errors.ts';
import { safeFetch, type SafeFetchResult } from '../net/safe-fetch.ts';

/** Largest page body read. A larger one is refused rather than truncated: safeFetch stops at the cap and keeps nothing. */
export const READ_MAX_BYTES = 5 * 1024 * 1024;

/** Media types we can turn into text (the body of anything else is never downloaded). */
export const readableMediaTypes = ['text/html', 'application/xhtml+xml', 'application/pdf', 'text/plain', 'text/markdown', 'text/x-markdown'] as const;
export type ReadableMediaType = (typeof readableMediaTypes)[number];
const isReadable = (mediaType: string): mediaType is ReadableMediaType => (readableMediaTypes as readonly string[]).includes(mediaType);

export interface FetchPageOptions {
  config: Pick<Config, 'OUTBOUND_ALLOWLIST' | 'READ_TIMEOUT_MS'>;
  signal: AbortSignal;
  maxBytes?: number;
}

export type FetchedPage = SafeFetchResult & { contentType: ReadableMediaType };

/**
 * GETs a user-supplied URL through the SSRF guard (public addresses only, unless on
 * OUTBOUND_ALLOWLIST; every redirect re-checked; pinned connections), within READ_TIMEOUT_MS and
 * the size cap, and translates its refusals into `ReadFailure`s a person can act on.
 */
export async function fetchPage(url: string, { config, signal, maxBytes = READ_MAX_BYTES }: FetchPageOptions): Promise<FetchedPage> {
  let refusedType: string | undefined;
  try {
    const page = await safeFetch(url, {
      allowlist: parseAllowlist(config.OUTBOUND_ALLOWLIST),
      timeoutMs: config.READ_TIMEOUT_MS,
      maxBytes,
      acceptContentType: (mediaType) => {
        if (isReadable(mediaType)) return true;
        refusedType = mediaType;
        return false;
      },
      signal,
      userAgent: 'WorkspacePlatform-Reader/1',
    });
    return page as FetchedPage;
  } catch (error) {
    // Canceled from outside (the read's own deadline, a stopping worker): the machinery decides what that means.
    if (signal.aborted) throw signal.reason;
    if (!(error instanceof OutboundFetchError)) throw error;
    const { kind, message } = describe(error, refusedType, maxBytes);
    throw new ReadFailure(kind, message, { cause: error });
  }
}

const kinds: Record<OutboundFailureCode, ReadFailureKind> = {
  url_not_allowed: 'refused',
  address_not_allowed: 'refused',
  content_type_not_allowed: 'refused',
  too_large: 'refused',
  timeout: 'timeout',
  too_many_redirects: 'failed',
  upstream_status: 'failed',
  dns_failed: 'failed',
  network: 'failed',
};

function describe(error: OutboundFetchError, refusedType: string | undefined, maxBytes: number): { kind: ReadFailureKind; message: string } {
  const kind = kinds[error.code];
  switch (error.code) {
    case 'address_not_allowed':
      return { kind, message: `the URL is not allowed: ${error.message}; only pages on the public internet can be read` };
    case 'url_not_allowed':
      return { kind, message: `the URL is not allowed: ${error.message}` };
    case 'content_type_not_allowed':
      return { kind, message: `content type ${refusedType ?? 'unknown'} is not readable (HTML, PDF, plain text and Markdown are)` };
    case 'too_large':
      return { kind, message: `the page is larger than ${Math.round(maxBytes / 1024 / 1024)} MiB, the most that is read` };
    case 'timeout':
      return { kind, message: `the page did not arrive in time (${error.message})` };
    default:
      return { kind, message: `the page could not be fetched: ${error.message}` };
  }
}
