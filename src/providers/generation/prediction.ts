import { isReadFailure, ReadFailure } from '../../core/read-failure.ts';
import { pause } from '../http-retry.ts';
import { GenerationHttp, type GenerationHttpOptions, parseJson } from './client.ts';
import { sniffFile } from './sniff.ts';
import type { GeneratedFile, GenerationProvider, GenerationRequest, GenerationResult } from './types.ts';

export { verifyPredictionWebhook, type PredictionWebhook } from './webhook.ts';

export interface PredictionGenerationOptions extends GenerationHttpOptions {
  /** The service's base URL, with or without a trailing `/v1`. Output files are fetched only from its origin. */
  baseUrl: string;
  /** Sent as `webhook` so the service can announce completion; polling still decides, the webhook only wakes sooner. */
  webhookUrl?: string | undefined;
  /** First pause between two polls, doubling up to `pollMaxMs`. */
  pollInitialMs?: number;
  pollMaxMs?: number;
  /** With `webhookUrl`, a resumed prediction (one that outlasted its job's wait bound) is polled only this often: the webhook wakes its job sooner. */
  webhookPollMs?: number;
  /** A prediction still running after this long is canceled upstream and fails as a timeout. */
  maxWaitMs?: number;
  /** How long the best-effort cancel may take. */
  cancelTimeoutMs?: number;
}

interface Prediction {
  id: string;
  status: string;
  output?: unknown;
  error?: unknown;
  progress?: unknown;
  metrics?: { predict_time?: unknown };
}

const service = 'prediction service';
const terminal = new Set(['succeeded', 'failed', 'canceled', 'aborted']);

/**
 * An asynchronous "prediction" API (Replicate-like): `POST /v1/predictions` starts a job (with the
 * generation's `Idempotency-Key`, so a retried job finds its first prediction instead of paying for
 * another), `GET /v1/predictions/{id}` is polled with exponential backoff until it ends; each wait
 * goes through the request's `wait`, so a job may end its attempt there and resume polling the same
 * prediction (by `resume`) in a later one, woken early by the service's webhook. Outputs are
 * base64 data URIs or URLs on the service's own origin: any other URL is refused, since following
 * an upstream-chosen address would let it point the worker anywhere. Aborting cancels upstream.
 * Usage is `metrics.predict_time` in seconds when reported (what such services bill), else the file count.
 */
export class PredictionGenerationProvider implements GenerationProvider {
  readonly name = 'prediction' as const;
  private readonly base: string;
  private readonly origin: string;
  private readonly http: GenerationHttp;
  private readonly options: Required<Pick<PredictionGenerationOptions, 'pollInitialMs' | 'pollMaxMs' | 'webhookPollMs' | 'maxWaitMs' | 'cancelTimeoutMs'>> &
    Pick<PredictionGenerationOptions, 'webhookUrl'>;

  constructor(options: PredictionGenerationOptions) {
    const base = options.baseUrl.replace(/\/+$/, '');
    this.base = base.endsWith('/v1') ? base : `${base}/v1`;
    this.origin = new URL(this.base).origin;
    this.http = new GenerationHttp(service, options);
    this.options = {
      webhookUrl: options.webhookUrl,
      pollInitialMs: options.pollInitialMs ?? 250,
      pollMaxMs: options.pollMaxMs ?? 5_000,
      webhookPollMs: options.webhookPollMs ?? 30_000,
      maxWaitMs: options.maxWaitMs ?? 30 * 60_000,
      cancelTimeoutMs: options.cancelTimeoutMs ?? 5_000,
    };
  }

  async generate(request: GenerationRequest): Promise<GenerationResult> {
    const { signal } = request;
    const wait = request.wait ?? pause;
    let prediction: Prediction;
    // A later attempt resumes the prediction its generation recorded; the first starts it.
    if (request.resume) prediction = { id: request.resume, status: 'starting' };
    else {
      const json = {
        model: request.model,
        input: { ...request.parameters, prompt: request.prompt },
        ...(this.options.webhookUrl && { webhook: this.options.webhookUrl }),
      };
      const created = await this.http.send('POST', `${this.base}/predictions`, 'a new prediction', signal, {
        json,
        idempotencyKey: request.idempotencyKey,
        wait,
      });
      prediction = parsePrediction(created.body);
    }
    const url = this.predictionUrl(prediction.id);
    const deadline = Date.now() + this.options.maxWaitMs;
    try {
      if (request.resume) prediction = parsePrediction((await this.http.send('GET', url, `prediction ${prediction.id}`, signal, { wait })).body);
      else await request.onSubmitted?.(prediction.id);
      // A resumed prediction has waited long already: it is polled at the slowest pace at once, and
      // more slowly still when the service announces its end (the webhook wakes the job instead).
      const slowest = request.resume && this.options.webhookUrl ? this.options.webhookPollMs : this.options.pollMaxMs;
      for (let pace = request.resume ? slowest : this.options.pollInitialMs; ; pace = Math.min(pace * 2, slowest)) {
        if (typeof prediction.progress === 'number' && Number.isFinite(prediction.progress))
          request.onProgress?.(Math.min(1, Math.max(0, prediction.progress)));
        if (terminal.has(prediction.status)) break;
        if (Date.now() + pace > deadline) throw new ReadFailure('timeout', `prediction ${prediction.id} did not finish in ${this.options.maxWaitMs} ms`);
        await wait(pace, signal);
        prediction = parsePrediction((await this.http.send('GET', url, `prediction ${prediction.id}`, signal, { wait })).body);
      }
    } catch (error) {
      // Stopped by us (abort, our deadline), not by the service: stop the paid job too.
      if (signal.aborted || (isReadFailure(error) && error.kind === 'timeout')) await this.cancel(prediction.id);
      throw error;
    }
    if (prediction.status !== 'succeeded') {
      const reason = typeof prediction.error === 'string' ? prediction.error : JSON.stringify(prediction.error ?? 'no reason given');
      throw new ReadFailure('failed', `prediction ${prediction.id} ${prediction.status}: ${reason.slice(0, 300)}`);
    }
    const files = await this.outputs(prediction, request);
    const seconds = prediction.metrics?.predict_time;
    const usage =
      typeof seconds === 'number' && Number.isFinite(seconds)
        ? { units: seconds, unit: 'seconds' }
        : request.kind === 'text'
          ? { units: [...files[0]!.bytes.toString('utf8')].length, unit: 'characters' }
          : { units: files.length, unit: request.kind };
    return { files, usage, sandbox: false, providerJobId: prediction.id };
  }

  /** Closes the pooled connections (on shutdown). */
  close(): Promise<void> {
    return this.http.close();
  }

  /** Best effort: the caller is already failing, and the service's own timeout ends a job we could not cancel. */
  async cancel(predictionId: string): Promise<void> {
    await this.http
      .send('POST', `${this.predictionUrl(predictionId)}/cancel`, 'a cancel', AbortSignal.timeout(this.options.cancelTimeoutMs))
      .catch(() => undefined);
  }

  private predictionUrl(id: string): string {
    return `${this.base}/predictions/${encodeURIComponent(id)}`;
  }

  private async outputs(prediction: Prediction, request: GenerationRequest): Promise<GeneratedFile[]> {
    const items = (Array.isArray(prediction.output) ? prediction.output : [prediction.output]).filter((item) => item !== null && item !== undefined);
    if (items.length === 0 || items.some((item) => typeof item !== 'string'))
      throw new ReadFailure('malformed', `prediction ${prediction.id} succeeded without an output (a string or a list of strings)`);
    const strings = items as string[];
    // Language models stream their output as a list of text pieces.
    if (request.kind === 'text') return [{ contentType: 'text/plain; charset=utf-8', extension: 'txt', bytes: Buffer.from(strings.join(''), 'utf8') }];
    const files: GeneratedFile[] = [];
    for (const item of strings) {
      const bytes = item.startsWith('data:') ? dataUri(item) : await this.download(item, request.signal);
      const file = sniffFile(bytes, request.kind);
      if (!file) throw new ReadFailure('malformed', `prediction ${prediction.id} returned a file that is not a known ${request.kind} format`);
      files.push(file);
    }
    return files;
  }

  private async download(address: string, signal: AbortSignal): Promise<Buffer> {
    let url: URL;
    try {
      url = new URL(address);
    } catch {
      throw new ReadFailure('malformed', `prediction output is neither a data URI nor a URL: ${address.slice(0, 100)}`);
    }
    if (url.origin !== this.origin) throw new ReadFailure('malformed', `prediction output is on another host (${url.host}); only ${this.origin} is fetched`);
    return (await this.http.send('GET', url.href, 'an output file', signal, { accept: '*/*' })).body;
  }
}

function parsePrediction(body: Buffer): Prediction {
  const parsed = parseJson(body, service, 'a prediction') as Partial<Prediction> | null;
  if (!parsed || typeof parsed.id !== 'string' || parsed.id === '' || typeof parsed.status !== 'string')
    throw new ReadFailure('malformed', `${service} answered without a prediction id and status`);
  return parsed as Prediction;
}

/** `data:<type>;base64,<data>`: the type is ignored, the bytes are sniffed. */
function dataUri(uri: string): Buffer {
  const match = /^data:[^,]*;base64,(.*)$/s.exec(uri);
  if (!match) throw new ReadFailure('malformed', 'prediction output is a data URI that is not base64');
  return Buffer.from(match[1]!, 'base64');
}
