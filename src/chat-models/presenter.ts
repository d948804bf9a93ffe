import type { z } from '../core/zod.ts';
import type {
  availableChatModelSchema,
  chatModelCopySchema,
  chatModelListItemSchema,
  chatModelParametersSchema,
  chatModelProviders,
  chatModelSchema,
} from './schema.ts';

export type ChatModelParameters = z.infer<typeof chatModelParametersSchema>;

export interface ChatModelRow {
  id: string;
  provider: (typeof chatModelProviders)[number];
  name: string;
  description: string;
  context_window: number;
  input_credits_per_1k_tokens: number;
  output_credits_per_1k_tokens: number;
  enabled_by_default: boolean;
  created_at: Date;
  updated_at: Date;
}

export interface ChatModelCopyRow {
  organization_id: string;
  chat_model_id: string;
  enabled: boolean;
  display_name: string | null;
  default_parameters: ChatModelParameters | null;
  input_credits_per_1k_tokens: number | null;
  output_credits_per_1k_tokens: number | null;
  updated_by_id: string | null;
  updated_at: Date;
}

/** A model as an organization uses it: the catalog entry with the organization's copy (if set) over it. */
export interface EffectiveChatModel {
  model: ChatModelRow;
  organization_id: string;
  copy: ChatModelCopyRow | null;
}

export function presentChatModel(row: ChatModelRow): z.input<typeof chatModelSchema> {
  return {
    id: row.id,
    provider: row.provider,
    name: row.name,
    description: row.description,
    context_window: row.context_window,
    input_credits_per_1k_tokens: row.input_credits_per_1k_tokens,
    output_credits_per_1k_tokens: row.output_credits_per_1k_tokens,
    enabled_by_default: row.enabled_by_default,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

export function presentChatModelListItem(row: ChatModelRow & { enabled: boolean | null }): z.input<typeof chatModelListItemSchema> {
  return { ...presentChatModel(row), enabled: row.enabled };
}

export const effectivePrices = ({ model, copy }: EffectiveChatModel) => ({
  input_credits_per_1k_tokens: copy?.input_credits_per_1k_tokens ?? model.input_credits_per_1k_tokens,
  output_credits_per_1k_tokens: copy?.output_credits_per_1k_tokens ?? model.output_credits_per_1k_tokens,
});

export function presentAvailableChatModel(effective: EffectiveChatModel): z.input<typeof availableChatModelSchema> {
  const { model, copy } = effective;
  return {
    id: model.id,
    provider: model.provider,
    display_name: copy?.display_name ?? model.name,
    name: model.name,
    description: model.description,
    context_window: model.context_window,
    default_parameters: copy?.default_parameters ?? null,
    ...effectivePrices(effective),
  };
}

export function presentChatModelCopy(effective: EffectiveChatModel): z.input<typeof chatModelCopySchema> {
  const { model, copy } = effective;
  return {
    chat_model_id: model.id,
    organization_id: effective.organization_id,
    customized: copy !== null,
    enabled: copy?.enabled ?? model.enabled_by_default,
    display_name: copy?.display_name ?? null,
    default_parameters: copy?.default_parameters ?? null,
    input_credits_per_1k_tokens: copy?.input_credits_per_1k_tokens ?? null,
    output_credits_per_1k_tokens: copy?.output_credits_per_1k_tokens ?? null,
    effective: { display_name: copy?.display_name ?? model.name, ...effectivePrices(effective) },
    updated_by_id: copy?.updated_by_id ?? null,
    updated_at: copy?.updated_at.toISOString() ?? null,
  };
}
