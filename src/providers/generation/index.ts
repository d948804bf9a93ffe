import { OpenAiGenerationProvider } from './openai.ts';
import { PredictionGenerationProvider } from './prediction.ts';
import { SandboxGenerationProvider } from './sandbox.ts';
import type { GenerationProvider } from './types.ts';

export type { GenerationHttpOptions } from './client.ts';
export { OpenAiGenerationProvider, type OpenAiGenerationOptions } from './openai.ts';
export { PredictionGenerationProvider, type PredictionGenerationOptions } from './prediction.ts';
export { SandboxGenerationProvider, type SandboxGenerationOptions } from './sandbox.ts';
export {
  type GeneratedFile,
  type GenerationKind,
  type GenerationProvider,
  type GenerationRequest,
  type GenerationResult,
  generationKinds,
} from './types.ts';
export { type PredictionWebhook, verifyPredictionWebhook } from './webhook.ts';

export interface GenerationProviderOptions {
  predictionUrl?: string | undefined;
  predictionKey?: string | undefined;
  /** Where the prediction service should announce completions (optional: polling alone is enough). */
  predictionWebhookUrl?: string | undefined;
  openaiUrl?: string | undefined;
  openaiKey?: string | undefined;
  sandboxDelayMs?: number | undefined;
}

/** A prediction service when configured, else an OpenAI-compatible one, else the offline sandbox. */
export function createGenerationProvider(options: GenerationProviderOptions): GenerationProvider {
  if (options.predictionUrl)
    return new PredictionGenerationProvider({ baseUrl: options.predictionUrl, apiKey: options.predictionKey, webhookUrl: options.predictionWebhookUrl });
  if (options.openaiUrl) return new OpenAiGenerationProvider({ baseUrl: options.openaiUrl, apiKey: options.openaiKey });
  return new SandboxGenerationProvider({ delayMs: options.sandboxDelayMs });
}

/** Who serves a generation model (generation_models.provider). */
export type GenerationService = 'sandbox' | 'openai-compatible' | 'prediction';

/** Every generation service this process can reach, by the name a model gives; null when it is not configured. */
export interface GenerationProviders {
  for(service: GenerationService): GenerationProvider | null;
}

/** The sandbox always; the OpenAI-compatible and prediction services when their URLs are set. */
export function createGenerationProviders(options: GenerationProviderOptions): GenerationProviders {
  const services: Record<GenerationService, GenerationProvider | null> = {
    sandbox: new SandboxGenerationProvider({ delayMs: options.sandboxDelayMs }),
    'openai-compatible': options.openaiUrl ? new OpenAiGenerationProvider({ baseUrl: options.openaiUrl, apiKey: options.openaiKey }) : null,
    prediction: options.predictionUrl
      ? new PredictionGenerationProvider({ baseUrl: options.predictionUrl, apiKey: options.predictionKey, webhookUrl: options.predictionWebhookUrl })
      : null,
  };
  return { for: (service) => services[service] };
}
