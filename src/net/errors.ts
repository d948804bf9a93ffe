/** Why a server-side fetch did not deliver a body. */
export type OutboundFailureCode =
  | 'url_not_allowed' // scheme, credentials, malformed URL
  | 'address_not_allowed' // resolves to a loopback/private/special address
  | 'too_many_redirects'
  | 'too_large'
  | 'timeout'
  | 'content_type_not_allowed'
  | 'upstream_status'
  | 'dns_failed'
  | 'network';

/**
 * A failed outbound fetch. `permanent` failures (a refused URL, a 404, a too-large body) would fail
 * the same way again; the others (reset connection, 503, DNS hiccup) are worth a retry.
 */
export class OutboundFetchError extends Error {
  readonly code: OutboundFailureCode;
  readonly permanent: boolean;
  constructor(code: OutboundFailureCode, message: string, permanent: boolean) {
    super(message);
    this.code = code;
    this.permanent = permanent;
    this.name = 'OutboundFetchError';
  }
}
