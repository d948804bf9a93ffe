import { type Dispatcher, request } from 'undici';
import type { AssetForModel, AssetModel, ExtractedPrompt, ModelProvider, Voice } from './types.ts';
import { ModelProviderError, UnknownModelError } from './types.ts';

const TIMEOUT_MS = 30_000;

/**
 * The model service over HTTP (MODELS_API_URL, bearer MODELS_API_KEY):
 * GET /v1/models → {models}, POST /v1/prompts/extract → {model, prompt}, POST /v1/voices/detect → {voices}.
 * The URL is operator configuration, not user input, so the SSRF guard is not needed here.
 */
export class HttpModelProvider implements ModelProvider {
  readonly name = 'http' as const;

  private readonly baseUrl: string;
  private readonly apiKey: string | undefined;
  constructor(baseUrl: string, apiKey: string | undefined) {
    this.baseUrl = baseUrl;
    this.apiKey = apiKey;
  }

  async listModels(): Promise<AssetModel[]> {
    const body = await this.call<{ models: AssetModel[] }>('GET', '/v1/models');
    return body.models;
  }

  async extractPrompt(asset: AssetForModel, options: { model?: string | undefined; instructions?: string | undefined }): Promise<ExtractedPrompt> {
    const body = await this.call<{ model: string; prompt: string }>(
      'POST',
      '/v1/prompts/extract',
      { asset, model: options.model ?? null, instructions: options.instructions ?? null },
      options.model,
    );
    return { model: body.model, prompt: body.prompt };
  }

  async detectVoices(asset: AssetForModel): Promise<Voice[]> {
    const body = await this.call<{ voices: Voice[] }>('POST', '/v1/voices/detect', { asset });
    return body.voices;
  }

  private async call<T>(method: 'GET' | 'POST', path: string, payload?: unknown, model?: string): Promise<T> {
    let response: Dispatcher.ResponseData;
    try {
      response = await request(new URL(path.replace(/^\//, ''), this.baseUrl.endsWith('/') ? this.baseUrl : `${this.baseUrl}/`), {
        method,
        headers: {
          accept: 'application/json',
          ...(payload !== undefined && { 'content-type': 'application/json' }),
          ...(this.apiKey && { authorization: `Bearer ${this.apiKey}` }),
        },
        ...(payload !== undefined && { body: JSON.stringify(payload) }),
        signal: AbortSignal.timeout(TIMEOUT_MS),
      });
    } catch (error) {
      throw new ModelProviderError(`model service unreachable: ${(error as Error).message}`);
    }
    const text = await response.body.text();
    if (response.statusCode === 404 && model !== undefined) throw new UnknownModelError(model);
    if (response.statusCode < 200 || response.statusCode > 299)
      throw new ModelProviderError(`model service answered ${response.statusCode}`, response.statusCode);
    try {
      return JSON.parse(text) as T;
    } catch {
      throw new ModelProviderError('model service answered with invalid JSON', response.statusCode);
    }
  }
}
