import { type Agent, type Dispatcher, request } from 'undici';
import { ReadFailure } from '../../core/read-failure.ts';
import {
  backoffMs,
  type HttpTuning,
  isRefusedConnection,
  isTimeout,
  pause,
  pooledAgent,
  retryableStatus,
  withDefaults,
  readCappedBody,
  retryAfterMs,
} from '../http-retry.ts';

/** The longest `Retry-After` a continuing job honours as asked (beyond it, the service is treated as asking an hour). */
const MAX_RETRY_AFTER_MS = 3600_000;
const firstHeader = (value: string | string[] | undefined) => (Array.isArray(value) ? value[0] : value);

export interface ProviderHttpOptions extends HttpTuning {
  apiKey?: string | undefined;
  /** A larger answer is refused as malformed rather than buffered (a runaway upstream must not exhaust the worker). */
  maxResponseBytes?: number;
  /** Pooled keep-alive connections to the service. */
  connections?: number;
}

/** Retries are safe for POSTs too: they carry the generation's idempotency key. */
export type GenerationHttpOptions = ProviderHttpOptions;

/** What differs between the services a ProviderHttp talks to. */
export interface ProviderHttpDefaults {
  tuning: Required<HttpTuning>;
  maxResponseBytes: number;
  connections: number;
  /** Statuses that mean the input itself was refused: the caller's 422, not a service fault. */
  refused: ReadonlySet<number>;
}

export interface Answer {
  status: number;
  headers: Dispatcher.ResponseData['headers'];
  body: Buffer;
}

/**
 * JSON over HTTP to a provider's service (the generation adapters, the social service): a pooled
 * agent, bearer auth, retries, timeouts and a size cap, all mapped to ReadFailure naming `service`.
 */
export class ProviderHttp {
  private readonly agent: Agent;
  private readonly options: Required<Omit<ProviderHttpOptions, 'apiKey' | 'connections'>> & Pick<ProviderHttpOptions, 'apiKey'>;
  private readonly refused: ReadonlySet<number>;

  private readonly service: string;
  constructor(service: string, options: ProviderHttpOptions, defaults: ProviderHttpDefaults) {
    this.service = service;
    this.options = {
      apiKey: options.apiKey,
      ...withDefaults(options, defaults.tuning),
      maxResponseBytes: options.maxResponseBytes ?? defaults.maxResponseBytes,
    };
    this.refused = defaults.refused;
    this.agent = pooledAgent(this.options, options.connections ?? defaults.connections);
  }

  /** A 2xx answer with its whole body; anything else throws ReadFailure once the retries are spent (an abort rethrows its reason). */
  async send(
    method: 'GET' | 'POST',
    url: string,
    what: string,
    signal: AbortSignal,
    options: {
      json?: unknown;
      idempotencyKey?: string | undefined;
      accept?: string;
      wait?: ((ms: number, signal: AbortSignal) => Promise<void>) | undefined;
    } = {},
  ): Promise<Answer> {
    const wait = options.wait ?? pause;
    const body = options.json === undefined ? undefined : JSON.stringify(options.json);
    for (let attempt = 0; ; attempt++) {
      signal.throwIfAborted();
      let response: Dispatcher.ResponseData;
      try {
        response = await request(url, {
          method,
          dispatcher: this.agent,
          headers: {
            accept: options.accept ?? 'application/json',
            ...(body !== undefined && { 'content-type': 'application/json' }),
            ...(options.idempotencyKey && { 'idempotency-key': options.idempotencyKey }),
            ...(this.options.apiKey && { authorization: `Bearer ${this.options.apiKey}` }),
          },
          ...(body !== undefined && { body }),
          signal,
        });
      } catch (error) {
        if (signal.aborted) throw signal.reason;
        if (isTimeout(error)) throw new ReadFailure('timeout', `${this.service} did not answer ${what} in time`, { cause: error });
        if (isRefusedConnection(error) && attempt < this.options.maxRetries) {
          await pause(backoffMs(attempt, undefined, this.options), signal);
          continue;
        }
        throw new ReadFailure('failed', `${this.service} unreachable: ${(error as Error).message}`, { cause: error });
      }
      const status = response.statusCode;
      if (status >= 200 && status <= 299) return { status, headers: response.headers, body: await this.read(response, signal, what) };
      // Small cap for error bodies: only a message is wanted from them.
      const detail = upstreamMessage(await this.read(response, signal, what, 64 * 1024).catch(() => Buffer.alloc(0)));
      signal.throwIfAborted();
      if (retryableStatus(status) && attempt < this.options.maxRetries) {
        // The cap on Retry-After spares a slot a long sleep; a caller's own `wait` (a job that continues later) takes the whole of it.
        const asked = options.wait ? (retryAfterMs(firstHeader(response.headers['retry-after'])) ?? 0) : 0;
        await wait(Math.max(backoffMs(attempt, response.headers['retry-after'], this.options), Math.min(asked, MAX_RETRY_AFTER_MS)), signal);
        continue;
      }
      const tries = attempt > 0 ? ` after ${attempt + 1} attempts` : '';
      const kind = this.refused.has(status) ? 'refused' : 'failed';
      throw new ReadFailure(kind, `${this.service} answered ${status} to ${what}${tries}${detail ? `: ${detail}` : ''}`);
    }
  }

  /** Closes the pooled connections (on shutdown). */
  close(): Promise<void> {
    return this.agent.close();
  }

  private read(response: Dispatcher.ResponseData, signal: AbortSignal, what: string, cap = this.options.maxResponseBytes): Promise<Buffer> {
    return readCappedBody(response, signal, `${this.service} answer to ${what}`, cap);
  }
}

/** A content-policy refusal or a bad size is the caller's 422. A synchronous image can take a minute to its headers. */
const generationDefaults: ProviderHttpDefaults = {
  tuning: { headersTimeoutMs: 120_000, bodyTimeoutMs: 60_000, maxRetries: 2, retryBaseMs: 500, retryMaxMs: 10_000 },
  maxResponseBytes: 20 * 1024 * 1024,
  connections: 16,
  refused: new Set([400, 422]),
};

/** What both generation adapters share. */
export class GenerationHttp extends ProviderHttp {
  constructor(service: string, options: GenerationHttpOptions) {
    super(service, options, generationDefaults);
  }
}

/** The body as JSON, or ReadFailure('malformed'). */
export function parseJson(body: Buffer, service: string, what: string): unknown {
  try {
    return JSON.parse(body.toString('utf8'));
  } catch {
    throw new ReadFailure('malformed', `${service} answered ${what} with something that is not JSON`);
  }
}

/** The upstream's own words for a refusal (`{error: {message}}`, `{error}`, `{detail}`, `{message}` or text), one line, trimmed. */
function upstreamMessage(body: Buffer): string {
  const text = body.toString('utf8');
  let message: unknown = text;
  try {
    const parsed = JSON.parse(text) as { error?: { message?: unknown } | string; detail?: unknown; message?: unknown };
    message = (typeof parsed.error === 'object' ? parsed.error?.message : parsed.error) ?? parsed.detail ?? parsed.message ?? text;
  } catch {}
  return String(message).replace(/\s+/g, ' ').trim().slice(0, 200);
}
