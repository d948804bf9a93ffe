import { CHECKED_BY_SERVER, z } from '../core/zod.ts';
import { networks, type ReadOperation } from './operation.ts';

/** The billing fields of every metered call besides its input (spec §4.5), in one place for social, search and read-url. */
export const callTermsFields = {
  organization_id: z.string().min(1).max(64).describe('Workspace billed'),
  max_credits: z
    .number()
    .int()
    .min(1)
    .max(1_000_000)
    .optional()
    .describe('Refuse the call (400, nothing held or billed) when its quoted ceiling is higher than this many credits')
    .openapi({ [CHECKED_BY_SERVER]: true }),
  tool_call_id: z
    .string()
    .min(1)
    .max(255)
    .nullable()
    .optional()
    .describe('The tool call behind the read, recorded on the ledger rows; every read that runs is billed, a repeated id too'),
  conversation_id: z
    .string()
    .uuid()
    .nullable()
    .optional()
    .describe(
      'Chat the call belongs to, for cost attribution; required with `message_id` or `run_lock`. 400 naming it when it is not a conversation the caller can read in the organization',
    )
    .openapi({ [CHECKED_BY_SERVER]: true }),
  message_id: z
    .string()
    .uuid()
    .nullable()
    .optional()
    .describe('Chat turn the call belongs to, for cost attribution. 400 naming it when it is not a message of `conversation_id`')
    .openapi({ [CHECKED_BY_SERVER]: true }),
  run_lock: z
    .boolean()
    .optional()
    .describe(
      'The chat turn holds its conversation’s run lock (needs `conversation_id`): refused (409) once it no longer does — checked when the call is accepted and again before its result is charged',
    ),
};
/**
 * `conversation_id` is required (not null) with a `message_id` or with `run_lock: true`, as the
 * document declares it: each rule an implication, "not A, or B".
 */
const withConversation = { required: ['conversation_id'], properties: { conversation_id: { type: 'string' as const } } };
export const callTermsDependencies = {
  allOf: [
    { anyOf: [{ not: { required: ['message_id'], properties: { message_id: { type: 'string' as const } } } }, withConversation] },
    { anyOf: [{ not: { required: ['run_lock'], properties: { run_lock: { const: true } } } }, withConversation] },
  ],
};
export const callTermsKeys = Object.keys(callTermsFields) as (keyof typeof callTermsFields)[];

export const priceSchema = z
  .object({
    per_request: z.number().int().min(0).describe('Credits for the call'),
    per_page: z.number().int().min(0).describe('Credits for each result page the provider fetches'),
  })
  .describe('The quote (the ceiling held before the call) counts every page the input allows; the charge counts the pages fetched.');

/** The 200 answer of a metered call (spec §4.5), with the operation's own result schema. */
export const callResponseOf = (operation: ReadOperation) =>
  z.object({
    operation: z.literal(operation.name),
    result: operation.output,
    requests: z.number().int().min(1).describe('Upstream requests (result pages) the read made'),
    credits_charged: z.number().int().min(0).describe('Credits captured from the hold; never more than the quote'),
  });

export const quoteSchema = z.object({
  operation: z.string(),
  credits: z.number().int().min(1).describe('The ceiling a call with this input holds; what `max_credits` is compared with'),
  pages: z.number().int().min(1).describe('Result pages the quote counts'),
  price: priceSchema,
});

export const descriptorSchema = z.object({
  name: z.string(),
  network: z.enum(networks).optional(),
  description: z.string(),
  input_schema: z.record(z.string(), z.unknown()).describe('JSON Schema of `input`'),
  output_schema: z.record(z.string(), z.unknown()).describe('JSON Schema of `result`'),
  price: priceSchema,
});
export type Descriptor = z.input<typeof descriptorSchema>;
