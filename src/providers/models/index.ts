import type { Config } from '../../config/schema.ts';
import { HttpModelProvider } from './http.ts';
import { SandboxModelProvider } from './sandbox.ts';
import type { ModelProvider } from './types.ts';

export type { AssetForModel, AssetModel, ExtractedPrompt, ModelProvider, Voice } from './types.ts';
export { ModelProviderError, UnknownModelError } from './types.ts';

export function createModelProvider(config: Config): ModelProvider {
  return config.MODELS_API_URL ? new HttpModelProvider(config.MODELS_API_URL, config.MODELS_API_KEY) : new SandboxModelProvider();
}
