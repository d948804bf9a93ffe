import { timestamp, uuid, z } from '../core/zod.ts';
import { runContextSchema } from './context/schema.ts';
import { MESSAGE_MAX_CHARS } from './message-schema.ts';

/** The most a turn may hold: what a scheduled task's `max_credits_per_run`, a generation's and a metered read's `max_credits` allow too. */
export const MAX_TURN_CREDITS = 1_000_000;

export const runStatuses = ['queued', 'running', 'succeeded', 'failed', 'stopped'] as const;

/** One turn of a conversation answered on a worker; while live it holds the conversation's run lock. */
export const runSchema = z
  .object({
    id: uuid,
    status: z.enum(runStatuses).openapi({
      description:
        '`queued` → `running` → `succeeded`; `failed` (no credits, provider failure, lock taken over after its worker died) or `stopped` (DELETE /run).',
    }),
    conversation_id: uuid,
    organization_id: z.string(),
    user_id: z.string().openapi({ description: 'Who started the run (and pays for it).' }),
    model: z.string().openapi({ description: 'Chat model id.' }),
    message_id: uuid.nullable().openapi({ description: 'The message answered; the assistant message is appended under it.' }),
    max_credits: z.number().int().nullable().openapi({ description: 'Ceiling asked for; null: computed from the model’s prices and `max_tokens`.' }),
    snapshot: z.string().openapi({ description: 'The partial (then final) output of the turn.' }),
    answer_message_id: uuid.nullable().openapi({ description: 'The assistant message, once appended.' }),
    credits_charged: z.number().int().nullable().openapi({ description: 'Credits captured for the turn, once finished.' }),
    error: z.object({ code: z.string(), message: z.string() }).nullable().openapi({ description: 'Why a failed run failed.' }),
    context: runContextSchema
      .nullable()
      .openapi({ description: 'What the turn sent its model (knowledge, messages kept and left out); null until it is sent.' }),
    heartbeat_at: timestamp.nullable(),
    created_at: timestamp,
    updated_at: timestamp,
  })
  .strict()
  .openapi('ChatRun');

export const runEnvelope = z.object({ run: runSchema }).strict().openapi('ChatRunEnvelope');

export const startRunBody = z
  .object({
    model: z.string().min(1).max(200).optional().openapi({ description: 'A chat model available to the organization; default its first available one.' }),
    message_id: uuid.optional().openapi({ description: 'The message to answer (a message of this conversation); default the active leaf.' }),
    max_credits: z
      .number()
      .int()
      .min(1)
      .max(MAX_TURN_CREDITS)
      .optional()
      .openapi({ description: `Most credits the turn may spend (1–${MAX_TURN_CREDITS}; held from the start until it ends).` }),
  })
  .strict();

export const runSnapshotBody = z
  .object({
    content: z.string().max(MESSAGE_MAX_CHARS).openapi({ description: 'The partial output of the running turn.' }),
  })
  .strict();
