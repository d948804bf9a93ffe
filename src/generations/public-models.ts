import { chatModelCatalog } from '../chat-models/index.ts';
import { z } from '../core/zod.ts';
import type { Deps } from '../platform/deps.ts';
import { generationModelCatalog, generationModelKinds, generationUnits } from './models.ts';
import { configuredProviders } from '../providers/configured.ts';

const chatPrices = z.object({
  input_credits_per_1k_tokens: z.number().int(),
  output_credits_per_1k_tokens: z.number().int(),
});
const generationPrices = z.object({
  unit: z.enum(generationUnits).describe('What the provider bills: an image, a second, a frame, 1,000 characters or tokens'),
  credits_per_unit: z.number().int(),
  max_units: z.number().int().describe('The most units one generation may use: its quote counts them all'),
});

export const publicModelSchema = z.object({
  id: z.string(),
  kind: z.enum(['chat', ...generationModelKinds]),
  provider: z.string(),
  name: z.string(),
  description: z.string(),
  enabled_by_default: z.boolean(),
  prices: z.union([chatPrices, generationPrices]),
});
export const publicModelsSchema = z.object({ models: z.array(publicModelSchema) });

/**
 * Every chat and generation model usable here (the sandbox's, and those of each provider configured)
 * with its kind, provider and catalog prices (an organization's chat-model overrides are its own:
 * GET /chat-models/available).
 */
export async function listPublicModels(deps: Pick<Deps, 'db' | 'config'>): Promise<z.input<typeof publicModelsSchema>> {
  const usable = (kind: 'chat' | 'generation') => new Set(configuredProviders(deps.config, kind));
  const [chat, generation] = await Promise.all([
    chatModelCatalog(deps.db).then((models) => models.filter((m) => usable('chat').has(m.provider))),
    generationModelCatalog(deps.db).then((models) => models.filter((m) => usable('generation').has(m.provider))),
  ]);
  return {
    models: [
      ...chat.map((m) => ({
        id: m.id,
        kind: 'chat' as const,
        provider: m.provider,
        name: m.name,
        description: m.description,
        enabled_by_default: m.enabled_by_default,
        prices: { input_credits_per_1k_tokens: m.input_credits_per_1k_tokens, output_credits_per_1k_tokens: m.output_credits_per_1k_tokens },
      })),
      ...generation.map((m) => ({
        id: m.id,
        kind: m.kind,
        provider: m.provider,
        name: m.name,
        description: m.description,
        enabled_by_default: m.enabled_by_default,
        prices: { unit: m.unit, credits_per_unit: m.credits_per_unit, max_units: m.max_units },
      })),
    ],
  };
}
