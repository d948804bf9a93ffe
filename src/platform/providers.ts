import { createBillingProvider, type BillingProvider } from '../providers/billing/index.ts';
import type { Config } from '../config/schema.ts';
import { createChatProvider, type ChatProvider } from '../providers/chat/index.ts';
import type { Db } from '../db/knex.ts';
import { createEmailProvider, type EmailProvider } from '../providers/email/index.ts';
import { createGenerationProviders, type GenerationProviders } from '../providers/generation/index.ts';
import { createModelProvider, type ModelProvider } from '../providers/models/index.ts';
import { createSearchProvider, type SearchProvider } from '../providers/search/index.ts';
import { createSocialProvider, type SocialProvider } from '../providers/social/index.ts';
import { createStorage, type ObjectStorage } from '../providers/storage/index.ts';
import { ProviderLimiter } from '../providers/limits.ts';

/**
 * External services, each behind a small interface: the sandbox/local implementation when its
 * variables are unset, the real HTTP adapter when they are set.
 */
export interface Providers {
  billing: BillingProvider;
  chat: ChatProvider;
  email: EmailProvider;
  generation: GenerationProviders;
  models: ModelProvider;
  search: SearchProvider;
  social: SocialProvider;
  storage: ObjectStorage;
}

export function createProviders(config: Config, db: Db): Providers {
  return limitedByConfig(
    {
      billing: createBillingProvider(config),
      chat: createChatProvider(config),
      email: createEmailProvider(config, db),
      generation: createGenerationProviders({
        openaiUrl: config.GENERATION_OPENAI_URL,
        openaiKey: config.GENERATION_OPENAI_KEY,
        predictionUrl: config.GENERATION_PREDICTION_URL,
        predictionKey: config.GENERATION_PREDICTION_KEY,
        predictionWebhookUrl: config.GENERATION_PREDICTION_WEBHOOK_URL,
        sandboxDelayMs: config.GENERATION_SANDBOX_DELAY_MS,
      }),
      models: createModelProvider(config),
      search: createSearchProvider({ apiUrl: config.SEARCH_API_URL, apiKey: config.SEARCH_API_KEY }),
      social: createSocialProvider({ apiUrl: config.SOCIAL_API_URL, apiKey: config.SOCIAL_API_KEY }),
      storage: createStorage(config),
    },
    new ProviderLimiter(db, config.PROVIDER_LIMITS ?? {}),
  );
}

/**
 * The providers with a limit in PROVIDER_LIMITS call through the limiter (src/providers/limits.ts):
 * a chat stream holds a slot of `chat` from its first chunk to its end, a social or search read one
 * of its own; the others are left as they are.
 */
function limitedByConfig(providers: Providers, limiter: ProviderLimiter): Providers {
  const { chat, social, search } = providers;
  return {
    ...providers,
    ...(limiter.limitOf('chat') && { chat: { name: chat.name, stream: (request) => limiter.stream('chat', () => chat.stream(request)) } }),
    ...(limiter.limitOf('social') && { social: { name: social.name, read: (...args) => limiter.run('social', () => social.read(...args)) } }),
    ...(limiter.limitOf('search') && { search: { name: search.name, search: (...args) => limiter.run('search', () => search.search(...args)) } }),
  };
}
