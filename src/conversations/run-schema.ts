import { CHECKED_BY_SERVER, timestamp, uuid, z } from '../core/zod.ts';
import { runContextSchema } from './context/schema.ts';
import { MESSAGE_MAX_CHARS } from './message-schema.ts';

/** The most a turn may hold: what a scheduled task's `max_credits_per_run`, a generation's and a metered read's `max_credits` allow too. */
export const MAX_TURN_CREDITS = 1_000_000;

export const runStatuses = ['queued', 'running', 'awaiting_approval', 'succeeded', 'failed', 'stopped'] as const;

/** One tool call of a chat run, as the run records it. */
export const runToolCallSchema = z
  .object({
    tool_call_id: z.string().openapi({ description: 'The model’s id of the call (a model may reuse an id in a later round).' }),
    name: z.string(),
    round: z.number().int().min(1).openapi({ description: 'The model → tools round it was asked in (1 first).' }),
    status: z.enum(['running', 'awaiting_approval', 'succeeded', 'failed']).openapi({
      description:
        '`awaiting_approval`: its tool needs the caller’s answer (POST /conversations/{conversation_id}/run/approvals). `failed`: its error (or its rejection) went back to the model as the tool’s result.',
    }),
    arguments: z.string().openapi({ description: 'The arguments as the model wrote them (JSON text).' }),
    credits: z
      .number()
      .int()
      .min(0)
      .openapi({ description: 'Credits captured for it (billed tools: web search, read_url, the social operations); 0 for free tools and failures.' }),
    message_id: uuid.nullable().openapi({ description: 'The `tool` message holding its result, once written.' }),
    approved: z.boolean().nullable().openapi({ description: 'Its approval’s answer: true approved, false rejected; null when it needed none or still waits.' }),
    decided_by_id: z
      .string()
      .nullable()
      .openapi({ description: 'Who approved or rejected it: always the turn’s user (`user_id`), the one whose credentials it runs with.' }),
    decided_at: timestamp.nullable().openapi({ description: 'When it was approved or rejected.' }),
  })
  .strict()
  .openapi('ChatRunToolCall');

/** One turn of a conversation answered on a worker; while live it holds the conversation's run lock. */
export const runSchema = z
  .object({
    id: uuid,
    status: z.enum(runStatuses).openapi({
      description:
        '`queued` → `running` → `succeeded`; `failed` (no credits, provider failure, lock taken over after its worker died) or `stopped` (DELETE /run, or tool calls left unapproved past `approval_expires_at`). `awaiting_approval`: live, holding the lock, waiting for the caller to approve or reject the tool calls listed `awaiting_approval` in `tool_calls`.',
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
    tools: z
      .array(z.string())
      .nullable()
      .openapi({ description: 'The tools the turn may offer the model, as asked for at the start; null: every tool of the workspace the caller can use.' }),
    approval_expires_at: timestamp
      .nullable()
      .openapi({ description: 'While `awaiting_approval`: when the turn ends (stopped, its hold released) if the calls are not answered.' }),
    tool_calls: z
      .array(runToolCallSchema)
      .openapi({ description: 'The tools the model called in this turn, in order (round, then position), each with its status and the credits it cost.' }),
    heartbeat_at: timestamp.nullable(),
    created_at: timestamp,
    updated_at: timestamp,
  })
  .strict()
  .openapi('ChatRun');

export const runEnvelope = z.object({ run: runSchema }).strict().openapi('ChatRunEnvelope');

export const startRunBody = z
  .object({
    model: z
      .string()
      .min(1)
      .max(200)
      .optional()
      .openapi({ description: 'A chat model available to the organization; default its first available one.' })
      .openapi({ [CHECKED_BY_SERVER]: true }),
    message_id: uuid.optional().openapi({ description: 'The message to answer (a message of this conversation); default the active leaf.' }),
    max_credits: z
      .number()
      .int()
      .min(1)
      .max(MAX_TURN_CREDITS)
      .optional()
      .openapi({
        description: `Most credits the turn may spend (1–${MAX_TURN_CREDITS}; held from the start until it ends), its tool calls included: a paid tool call that would pass it is not made (the model reads why).`,
      }),
    tools: z
      .array(z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'must be a tool name (letters, digits, `_`, `-`; at most 64)'))
      .max(200)
      .optional()
      .openapi({
        description:
          'Narrow the tools the model may call to these names (`[]`: none). Each is a built-in tool — every metered read of the catalog (`search`, `read_url`, the social operations of GET /social/operations, with their input schemas) and `search_assets` — or `<namespace>__<tool>` of an MCP connector of the organization you can use (the namespace is the connector’s name in lowercase letters, digits and `_`); anything else is 400 naming the entry. Default: all of them.',
      }),
  })
  .strict();

export const runSnapshotBody = z
  .object({
    content: z.string().max(MESSAGE_MAX_CHARS).openapi({ description: 'The partial output of the running turn.' }),
  })
  .strict();

export const approvalsBody = z
  .object({
    decisions: z
      .array(
        z
          .object({
            tool_call_id: z.string().min(1).max(255).openapi({ description: 'A call of the turn listed `awaiting_approval`.' }),
            approve: z.boolean().openapi({ description: '`true`: the call runs; `false`: the model reads that the user rejected it.' }),
          })
          .strict(),
      )
      .min(1)
      .max(100),
  })
  .strict()
  .openapi('ChatRunApprovals');
