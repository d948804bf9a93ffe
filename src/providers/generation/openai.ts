import { ReadFailure } from '../../core/read-failure.ts';
import { GenerationHttp, type GenerationHttpOptions, parseJson } from './client.ts';
import { sniffFile } from './sniff.ts';
import type { GeneratedFile, GenerationProvider, GenerationRequest, GenerationResult } from './types.ts';

export interface OpenAiGenerationOptions extends GenerationHttpOptions {
  /** The service's base URL, with or without a trailing `/v1`. */
  baseUrl: string;
}

const service = 'generation service';

/**
 * A synchronous OpenAI-compatible API: images (`/images/generations`, base64 in JSON), speech
 * (`/audio/speech`, a WAV body) and text (`/chat/completions`, not streamed). Every request carries
 * the generation's `Idempotency-Key`, so a retry (ours or the job's) does not pay twice upstream.
 * Usage is the provider's billing unit: one image, the input characters of speech, tokens of text.
 * The URL is operator configuration, not user input, so the SSRF guard is not needed here.
 */
export class OpenAiGenerationProvider implements GenerationProvider {
  readonly name = 'openai' as const;
  private readonly base: string;
  private readonly http: GenerationHttp;

  constructor(options: OpenAiGenerationOptions) {
    const base = options.baseUrl.replace(/\/+$/, '');
    this.base = base.endsWith('/v1') ? base : `${base}/v1`;
    this.http = new GenerationHttp(service, options);
  }

  async generate(request: GenerationRequest): Promise<GenerationResult> {
    switch (request.kind) {
      case 'image':
        return this.image(request);
      case 'audio':
        return this.speech(request);
      case 'text':
        return this.text(request);
      case 'video':
        throw new ReadFailure('refused', 'this provider does not generate video');
    }
  }

  /** Closes the pooled connections (on shutdown). */
  close(): Promise<void> {
    return this.http.close();
  }

  private async image(request: GenerationRequest): Promise<GenerationResult> {
    const { parameters } = request;
    const size =
      typeof parameters.size === 'string'
        ? parameters.size
        : `${typeof parameters.width === 'number' ? parameters.width : 1024}x${typeof parameters.height === 'number' ? parameters.height : 1024}`;
    const body = { model: request.model, prompt: request.prompt, n: 1, size, response_format: 'b64_json' };
    const answer = await this.post('/images/generations', 'an image generation', request, body);
    const data = (parseJson(answer, service, 'an image generation') as { data?: { b64_json?: unknown }[] } | null)?.data;
    const encoded = Array.isArray(data) ? data[0]?.b64_json : undefined;
    if (typeof encoded !== 'string' || encoded === '') throw new ReadFailure('malformed', `${service} answered an image generation without data[0].b64_json`);
    const file = sniffFile(Buffer.from(encoded, 'base64'), 'image');
    if (!file || file.contentType === 'image/gif') throw new ReadFailure('malformed', `${service} returned image bytes that are not PNG, JPEG or WebP`);
    return { files: [file], usage: { units: 1, unit: 'image' }, sandbox: false };
  }

  private async speech(request: GenerationRequest): Promise<GenerationResult> {
    const voice = typeof request.parameters.voice === 'string' ? request.parameters.voice : 'alloy';
    const body = { model: request.model, input: request.prompt, voice, response_format: 'wav' };
    const bytes = await this.post('/audio/speech', 'a speech generation', request, body, 'audio/wav');
    const file = sniffFile(bytes, 'audio');
    if (file?.extension !== 'wav') throw new ReadFailure('malformed', `${service} returned speech that is not a WAV file`);
    return { files: [file], usage: { units: [...request.prompt].length, unit: 'characters' }, sandbox: false };
  }

  private async text(request: GenerationRequest): Promise<GenerationResult> {
    const body = { model: request.model, messages: [{ role: 'user', content: request.prompt }] };
    const answer = parseJson(await this.post('/chat/completions', 'a text generation', request, body), service, 'a text generation') as Completion | null;
    const content = answer?.choices?.[0]?.message?.content;
    if (typeof content !== 'string') throw new ReadFailure('malformed', `${service} answered a text generation without choices[0].message.content`);
    const file: GeneratedFile = { contentType: 'text/plain; charset=utf-8', extension: 'txt', bytes: Buffer.from(content, 'utf8') };
    const tokens = answer?.usage?.total_tokens;
    // Without reported usage (some compatible servers), count characters rather than guess tokens.
    const usage =
      typeof tokens === 'number' && Number.isFinite(tokens) ? { units: tokens, unit: 'tokens' } : { units: [...content].length, unit: 'characters' };
    return { files: [file], usage, sandbox: false };
  }

  private async post(path: string, what: string, request: GenerationRequest, json: unknown, accept?: string): Promise<Buffer> {
    const answer = await this.http.send('POST', `${this.base}${path}`, what, request.signal, {
      json,
      idempotencyKey: request.idempotencyKey,
      wait: request.wait,
      ...(accept && { accept }),
    });
    return answer.body;
  }
}

interface Completion {
  choices?: { message?: { content?: unknown } }[];
  usage?: { total_tokens?: unknown };
}
