// The CLI's side of the operator API: an openapi-fetch client typed by the committed types of the
// live OpenAPI document (./openapi-types.ts, `npm run ops:types`), so every call, its parameters and
// its answer are checked against the contract; failures become errors the runner reports.
import createClient, { type Client } from 'openapi-fetch';
import type { paths } from './openapi-types.ts';

export type OpsClient = Client<paths>;

/** A command line the CLI cannot run: exit 2 with the usage text. */
export class UsageError extends Error {}

/** The API's Error body (src/http/errors.ts), or a network failure dressed as one. */
export class ApiError extends Error {
  readonly status: number;
  readonly code: string;
  constructor(status: number, code: string, message: string) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

/** A client of the operator API at `base` with a bearer `token` (an operator's, or an organization owner's or admin's). */
export function opsClient(fetch: typeof globalThis.fetch, base: string, token: string): OpsClient {
  try {
    new URL(base);
  } catch {
    throw new UsageError(`--url: not a URL: ${base}`);
  }
  return createClient<paths>({
    baseUrl: base,
    fetch: (request: Request) => fetch(request),
    headers: { authorization: `Bearer ${token}`, accept: 'application/json' },
  });
}

/**
 * The answer of one call: its data, or an ApiError for the API's Error body, a network failure or an
 * answer that is not the API's JSON (a wrong --url).
 */
export async function answer<T>(call: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
  let result: { data?: T; error?: unknown; response: Response };
  try {
    result = await call;
  } catch (error) {
    if (error instanceof SyntaxError) throw new ApiError(0, 'not_json', `the API answered something other than JSON (is --url the API?)`);
    const cause = (error as { cause?: { code?: string; message?: string } }).cause;
    throw new ApiError(0, 'unreachable', `cannot reach the API: ${cause?.code ?? cause?.message ?? (error as Error).message}`);
  }
  const { data, error, response } = result;
  if (!response.ok) {
    const body = (typeof error === 'object' && error !== null ? error : {}) as { code?: string; message?: string };
    throw new ApiError(
      response.status,
      body.code ?? `http_${response.status}`,
      body.message ?? ((typeof error === 'string' && error.slice(0, 200)) || response.statusText),
    );
  }
  return data as T;
}
