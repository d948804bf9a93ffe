// The CLI's side of the operator API: one call per request, failures as errors the runner reports.

// biome-ignore lint/suspicious/noExplicitAny: the API's answers, read field by field as the contract (../schema.ts) describes them
export type Json = any;

export type Call = (method: string, path: string, request?: { query?: Record<string, unknown>; body?: unknown }) => Promise<Json>;

/** A command line the CLI cannot run: exit 2 with the usage text. */
export class UsageError extends Error {}

/** The API's Error body (src/http/errors.ts), or a network failure dressed as one. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/**
 * A client of the operator API at `base` with an operator's bearer `token`: JSON in and out; the
 * API's Error body, a network failure or a non-JSON answer become an ApiError.
 */
export function apiClient(fetch: typeof globalThis.fetch, base: string, token: string): Call {
  return async (method, path, request = {}) => {
    let url: URL;
    try {
      url = new URL(path, base);
    } catch {
      throw new UsageError(`--url: not a URL: ${base}`);
    }
    for (const [key, value] of Object.entries(request.query ?? {})) if (value !== undefined) url.searchParams.set(key, String(value));
    const headers: Record<string, string> = { authorization: `Bearer ${token}`, accept: 'application/json' };
    if (request.body !== undefined) headers['content-type'] = 'application/json';
    let response: Response;
    try {
      response = await fetch(url, { method, headers, ...(request.body !== undefined && { body: JSON.stringify(request.body) }) });
    } catch (error) {
      const cause = (error as { cause?: { code?: string; message?: string } }).cause;
      throw new ApiError(0, 'unreachable', `cannot reach ${url.origin}: ${cause?.code ?? cause?.message ?? (error as Error).message}`);
    }
    const text = await response.text();
    let body: Json;
    try {
      body = text ? JSON.parse(text) : null;
    } catch {
      body = undefined;
    }
    if (!response.ok) {
      throw new ApiError(response.status, body?.code ?? `http_${response.status}`, body?.message ?? (text.slice(0, 200) || response.statusText));
    }
    if (body === undefined) throw new ApiError(response.status, 'not_json', `${method} ${url.pathname} answered something other than JSON (is --url the API?)`);
    return body;
  };
}
