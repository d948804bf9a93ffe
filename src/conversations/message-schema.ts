import { pageOf, pageQuery } from '../core/pagination.ts';
import { CHECKED_BY_SERVER, timestamp, uuid, z } from '../core/zod.ts';

export const messageRoles = ['user', 'assistant', 'system', 'tool'] as const;

export const MESSAGE_MAX_CHARS = 200_000;

/** A tool call the model made in a chat run. */
export const toolCallSchema = z
  .object({
    id: z.string().openapi({ description: 'The model’s id of the call; the `tool` message with this `tool_call_id` holds its result.' }),
    name: z.string().openapi({ description: 'The tool called (a built-in tool, or `<namespace>__<tool>` of an MCP connector).' }),
    arguments: z.string().openapi({ description: 'The arguments as the model wrote them (JSON text).' }),
  })
  .strict()
  .openapi('ChatToolCall');

/** One message of a conversation's tree, with its place among its siblings (for branch switching). */
export const messageSchema = z
  .object({
    id: uuid,
    conversation_id: uuid,
    parent_id: uuid.nullable().openapi({ description: 'The message this one answers; null for a root message.' }),
    role: z.enum(messageRoles),
    content: z.string(),
    created_by_id: z.string().nullable(),
    credits: z.number().int().nullable().openapi({ description: 'Credits the turn cost, once stamped; null until then.' }),
    tool_calls: z.array(toolCallSchema).nullable().openapi({
      description: 'An assistant message of a chat run: the tools the model called in that round (their results follow as `tool` messages); null otherwise.',
    }),
    tool_call_id: z
      .string()
      .nullable()
      .openapi({ description: 'A `tool` message of a chat run: the id of the call (in the assistant message above it) whose result it is; null otherwise.' }),
    created_at: timestamp,
    sibling_count: z.number().int().min(1).openapi({ description: 'How many messages share this message’s parent (itself included).' }),
    sibling_index: z.number().int().min(1).openapi({ description: '1-based position among those siblings, oldest first (`created_at`, then `id`).' }),
  })
  .strict()
  .openapi('ConversationMessage');

export const messageEnvelope = z.object({ message: messageSchema }).strict().openapi('ConversationMessageEnvelope');

export const postMessageBody = z
  .object({
    content: z
      .string()
      .min(1)
      .max(MESSAGE_MAX_CHARS)
      .openapi({ description: `The message text (1–${MESSAGE_MAX_CHARS} characters).` }),
    role: z
      .enum(messageRoles)
      .default('user')
      .openapi({ description: 'Default `user`; clients recording their own turns may send `assistant`, `system` or `tool`.' }),
    parent_id: uuid.optional().openapi({
      description: 'Append under this message of the conversation (an older one starts a new branch); default the active leaf.',
    }),
  })
  .strict()
  .openapi('PostConversationMessage');

export const listMessagesQuery = z.object({
  leaf_id: uuid.optional().openapi({ description: 'Read the branch ending at this message; default the conversation’s `active_leaf_id`.' }),
  ...pageQuery,
});

export const messagePage = pageOf(messageSchema).openapi('ConversationMessagePage');

export const forkBody = z
  .object({
    message_id: uuid
      .openapi({ description: 'The message of the conversation the fork ends at (it becomes the fork’s active leaf).' })
      .openapi({ [CHECKED_BY_SERVER]: true }),
    mode: z.enum(['branch', 'all']).default('branch').openapi({
      description:
        '`branch` (default): the messages from the root to `message_id`. `all`: every message of the conversation created at or before `message_id` (the other branches too).',
    }),
  })
  .strict()
  .openapi('ForkConversation');

export const stampCreditsBody = z
  .object({
    message_id: uuid.openapi({
      description: 'The message of the conversation to stamp with its turn’s cost (400 naming it otherwise).',
      [CHECKED_BY_SERVER]: true,
    }),
  })
  .strict()
  .openapi('StampConversationMessageCredits');

export const recallQuery = z.object({
  organization_id: z.string().min(1).max(64).openapi({ description: 'Organization whose conversations to search (the caller must be a member).' }),
  q: z.string().trim().min(1).max(500).openapi({ description: 'Web-search syntax: words, "quoted phrases", `or`, `-excluded` (English stemming).' }),
  ...pageQuery,
});

export const recallItemSchema = z
  .object({
    conversation_id: uuid,
    message_id: uuid,
    role: z.enum(messageRoles),
    snippet: z.string().openapi({
      description: 'Up to two fragments of the message around the matches, each match wrapped in `<mark>`…`</mark>`; the text is not HTML-escaped.',
    }),
    rank: z.number().openapi({ description: 'Relevance (Postgres `ts_rank`); higher first.' }),
    created_at: timestamp,
    conversation_title: z.string().nullable(),
  })
  .strict()
  .openapi('RecallHit');

export const recallPage = pageOf(recallItemSchema).openapi('RecallPage');
