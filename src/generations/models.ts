// The generation-model catalog (migrations/20261123110000_generation_models.ts): one source of prices for quotes, holds and GET /models/public.
import type { Knex } from 'knex';

export const generationModelKinds = ['image', 'audio', 'video', 'text'] as const;
export const generationUnits = ['image', 'second', 'frame', '1k_characters', '1k_tokens'] as const;

export interface GenerationModelRow {
  id: string;
  kind: (typeof generationModelKinds)[number];
  provider: 'sandbox' | 'openai-compatible' | 'prediction';
  name: string;
  description: string;
  unit: (typeof generationUnits)[number];
  credits_per_unit: number;
  max_units: number;
  enabled_by_default: boolean;
}

export async function generationModelCatalog(db: Knex): Promise<GenerationModelRow[]> {
  return (await db('generation_models')
    .orderBy([{ column: 'kind' }, { column: 'id' }])
    .select('*')) as GenerationModelRow[];
}
