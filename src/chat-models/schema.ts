import { pageOf, pageQuery } from '../core/pagination.ts';
import { CHECKED_BY_SERVER, singleLine, timestamp, z } from '../core/zod.ts';

/** Who serves a model: the offline sandbox, or the OpenAI-compatible chat service (CHAT_API_URL). */
export const chatModelProviders = ['sandbox', 'openai-compatible'] as const;

/** An override may not undercut the catalog price, nor exceed this many times it. */
export const PRICE_OVERRIDE_MAX_FACTOR = 10;

const organizationId = z.string().min(1).max(64);
/** Chat model ids are catalog strings (`sandbox-chat`, `gpt-4o-mini`), not UUIDs. */
const chatModelId = z
  .string()
  .min(1)
  .max(64)
  .regex(/^[a-z0-9][a-z0-9._-]*$/, 'is not a chat model id (lowercase letters, digits, `.`, `_`, `-`)')
  .openapi({ description: 'Chat model id: a catalog string such as `sandbox-chat` or `gpt-4o-mini` (not a UUID).', example: 'sandbox-chat' });
const credits = z.number().int().min(0).max(1_000_000);

export const chatModelIdParams = z.object({ chat_model_id: chatModelId });

export const chatModelParametersSchema = z
  .object({
    temperature: z.number().min(0).max(2).optional().openapi({ description: 'Sampling temperature, 0–2.' }),
    max_tokens: z.number().int().min(1).optional().openapi({ description: 'Longest answer in tokens, at most the model’s context window.' }),
    top_p: z.number().min(0).max(1).optional().openapi({ description: 'Nucleus sampling, 0–1.' }),
  })
  .strict()
  .openapi('ChatModelParameters', { description: 'Default sampling parameters an organization sets for a model.' });

const catalogFields = {
  id: z.string(),
  provider: z.enum(chatModelProviders),
  name: z.string(),
  description: z.string(),
  context_window: z.number().int().openapi({ description: 'Tokens the model reads and writes in one turn.' }),
  input_credits_per_1k_tokens: z.number().int().openapi({ description: 'Catalog price: credits per 1,000 input tokens.' }),
  output_credits_per_1k_tokens: z.number().int().openapi({ description: 'Catalog price: credits per 1,000 output tokens.' }),
  enabled_by_default: z.boolean().openapi({ description: 'Whether an organization that has not set its copy of the model has it enabled.' }),
  created_at: timestamp,
  updated_at: timestamp,
};

export const chatModelSchema = z.object(catalogFields).strict().openapi('ChatModel', { description: 'A chat model of the catalog.' });
export const chatModelEnvelope = z.object({ chat_model: chatModelSchema }).strict().openapi('ChatModelEnvelope');

export const chatModelListItemSchema = z
  .object({
    ...catalogFields,
    enabled: z
      .boolean()
      .nullable()
      .openapi({ description: 'Whether the model is enabled in the organization named by `organization_id`; null when none was named.' }),
  })
  .strict()
  .openapi('ChatModelListItem');
export const chatModelPage = pageOf(chatModelListItemSchema).openapi('ChatModelPage');

export const listChatModelsQuery = z.object({
  organization_id: organizationId
    .optional()
    .openapi({ description: 'Say for each model whether it is enabled in this organization (an empty page outside it).' }),
  ...pageQuery,
});
export const availableChatModelsQuery = z.object({ organization_id: organizationId, ...pageQuery });

export const availableChatModelSchema = z
  .object({
    id: z.string(),
    provider: z.enum(chatModelProviders),
    display_name: z.string().openapi({ description: 'The organization’s name for the model, else the catalog name.' }),
    name: z.string().openapi({ description: 'The catalog name.' }),
    description: z.string(),
    context_window: z.number().int(),
    default_parameters: chatModelParametersSchema.nullable(),
    input_credits_per_1k_tokens: z.number().int().openapi({ description: 'Effective price: the organization’s override, else the catalog price.' }),
    output_credits_per_1k_tokens: z.number().int().openapi({ description: 'Effective price: the organization’s override, else the catalog price.' }),
  })
  .strict()
  .openapi('AvailableChatModel', { description: 'A model enabled in the organization, with what the organization set for it.' });
export const availableChatModelPage = pageOf(availableChatModelSchema).openapi('AvailableChatModelPage');

export const chatModelCopyQuery = z.object({ organization_id: organizationId });

export const chatModelCopySchema = z
  .object({
    chat_model_id: z.string(),
    organization_id: z.string(),
    customized: z.boolean().openapi({ description: 'Whether the organization has set its copy; false means every value is the catalog’s.' }),
    enabled: z.boolean().openapi({ description: 'Effective: the copy’s setting, else the catalog’s `enabled_by_default`.' }),
    display_name: z.string().nullable().openapi({ description: 'The organization’s name for the model; null → the catalog name.' }),
    default_parameters: chatModelParametersSchema.nullable(),
    input_credits_per_1k_tokens: z.number().int().nullable().openapi({ description: 'Price override; null → the catalog price.' }),
    output_credits_per_1k_tokens: z.number().int().nullable().openapi({ description: 'Price override; null → the catalog price.' }),
    effective: z
      .object({
        display_name: z.string(),
        input_credits_per_1k_tokens: z.number().int(),
        output_credits_per_1k_tokens: z.number().int(),
      })
      .strict()
      .openapi({ description: 'What runs in the organization use: the overrides, else the catalog values.' }),
    updated_by_id: z.string().nullable(),
    updated_at: timestamp.nullable(),
  })
  .strict()
  .openapi('ChatModelCopy', { description: 'An organization’s copy of a catalog chat model.' });
export const chatModelCopyEnvelope = z.object({ chat_model_copy: chatModelCopySchema }).strict().openapi('ChatModelCopyEnvelope');

export const putChatModelCopyBody = z
  .object({
    organization_id: organizationId,
    enabled: z.boolean(),
    display_name: singleLine(120).nullable().optional().openapi({ description: 'null or omitted → the catalog name.' }),
    default_parameters: chatModelParametersSchema
      .nullable()
      .optional()
      .openapi({ [CHECKED_BY_SERVER]: true }),
    input_credits_per_1k_tokens: credits
      .nullable()
      .optional()
      .openapi({ description: `null or omitted → the catalog price; otherwise between the catalog price and ${PRICE_OVERRIDE_MAX_FACTOR} times it.` })
      .openapi({ [CHECKED_BY_SERVER]: true }),
    output_credits_per_1k_tokens: credits
      .nullable()
      .optional()
      .openapi({ description: `null or omitted → the catalog price; otherwise between the catalog price and ${PRICE_OVERRIDE_MAX_FACTOR} times it.` })
      .openapi({ [CHECKED_BY_SERVER]: true }),
  })
  .strict()
  .openapi('PutChatModelCopy', { description: 'Replaces the organization’s copy: an optional field omitted or null returns to the catalog value.' });
