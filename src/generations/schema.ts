import { pageOf, pageQuery } from '../core/pagination.ts';
import { CHECKED_BY_SERVER, singleLine, timestamp, uuid, z } from '../core/zod.ts';
import { generationModelKinds, generationUnits } from './models.ts';

export const generationStatuses = ['queued', 'running', 'succeeded', 'failed', 'canceled'] as const;

/** What a caller may tune; each model reads the fields of its kind and its provider (the sandbox all of them). */
export const generationParameters = z
  .object({
    width: z.number().int().min(16).max(4096).optional().describe('Image or video width in pixels'),
    height: z.number().int().min(16).max(4096).optional().describe('Image or video height in pixels'),
    duration_seconds: z.number().int().min(1).max(600).optional().describe('Audio or video length; the quote counts it'),
    frames: z.number().int().min(2).max(240).optional().describe('Video frames (frame-priced models); the quote counts them'),
    voice: singleLine(64).optional().describe('Speech voice (audio)'),
    max_characters: z.number().int().min(1).max(100_000).optional().describe('Longest text wanted (text); the quote counts it'),
    max_tokens: z.number().int().min(1).max(100_000).optional().describe('Longest text wanted in tokens (token-priced text models)'),
  })
  .strict();

const request = {
  organization_id: z.string().min(1).max(64),
  kind: z.enum(generationModelKinds),
  model: singleLine(64)
    .optional()
    .describe('A generation model of that kind (GET /models/public); default: the sandbox model of the kind')
    .openapi({ [CHECKED_BY_SERVER]: true }),
  prompt: z.string().min(1).max(8000),
  parameters: generationParameters.optional(),
};

export const quoteGenerationBody = z.object(request).strict();

export const createGenerationBody = z
  .object({
    ...request,
    max_credits: z.number().int().min(1).max(1_000_000).optional().describe('Refused (400, nothing held) when the quote is higher'),
    conversation_id: uuid.nullable().optional().describe('The chat it was made for (readable by the caller); its audience may read the generation'),
    canvas_id: uuid.nullable().optional().describe('The canvas it was made for (readable by the caller); its audience may read the generation'),
    project_id: uuid
      .nullable()
      .optional()
      .describe('A project the caller can edit, to file it in')
      .openapi({ [CHECKED_BY_SERVER]: true }),
    title: singleLine(300).optional(),
  })
  .strict();

export const updateGenerationBody = z
  .object({
    title: singleLine(300).optional(),
    status: z
      .literal('canceled')
      .optional()
      .describe('Cancels a queued or running generation: the provider call is aborted, nothing (or only what the provider charged) is captured'),
  })
  .strict()
  .refine((body) => body.title !== undefined || body.status !== undefined, { message: 'give title or status', path: ['status'] })
  .openapi({ anyOf: [{ required: ['title'] }, { required: ['status'] }] });

export const generationIdParams = z.object({ generation_id: uuid });

export const listGenerationsQuery = z.object({
  organization_id: z.string().min(1).max(64),
  kind: z.enum(generationModelKinds).optional(),
  status: z.enum(generationStatuses).optional(),
  conversation_id: uuid.optional(),
  project_id: uuid.optional(),
  ...pageQuery,
});

export const quoteSchema = z.object({
  kind: z.enum(generationModelKinds),
  model: z.string(),
  credits: z.number().int().min(1).describe('The ceiling held when the generation is created'),
  units: z.number().int().min(1),
  unit: z.enum(generationUnits),
  credits_per_unit: z.number().int(),
});

export const generationSchema = z.object({
  id: uuid,
  organization_id: z.string(),
  created_by_id: z.string(),
  kind: z.enum(generationModelKinds),
  model: z.string(),
  prompt: z.string(),
  parameters: z.record(z.string(), z.unknown()),
  title: z.string().nullable(),
  status: z.enum(generationStatuses),
  progress: z.number().min(0).max(1).nullable(),
  conversation_id: uuid.nullable(),
  canvas_id: uuid.nullable(),
  project_id: uuid.nullable(),
  quoted_credits: z.number().int(),
  max_credits: z.number().int().nullable(),
  credits_charged: z.number().int().nullable(),
  asset_ids: z.array(uuid).describe('The assets it produced (GET /assets/{asset_id}; the file at GET /assets/{asset_id}/file)'),
  sandbox: z.boolean().nullable().describe('Made by the offline sandbox (not a real model)'),
  error: z.object({ code: z.string(), message: z.string() }).nullable(),
  created_at: timestamp,
  updated_at: timestamp,
  started_at: timestamp.nullable(),
  finished_at: timestamp.nullable(),
});
export const generationEnvelope = z.object({ generation: generationSchema });
export const generationPage = pageOf(generationSchema);
