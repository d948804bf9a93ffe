import { pageOf, pageQuery } from '../core/pagination.ts';
import { CHECKED_BY_SERVER, commaSeparated, queryBoolean, singleLine, timestamp, UUID_PATTERN, userId, uuid, z } from '../core/zod.ts';
import { lifecycleFields, resourceFields, visibilitySchema, writableVisibilitySchema } from '../access/index.ts';

/** A list of chat tool names that narrows what a conversation's turns may offer (see POST /conversations/{id}/run `tools`). */
export const chatToolNames = z.array(z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'must be a tool name (letters, digits, `_`, `-`; at most 64)')).max(200);

export const conversationIdParams = z.object({ conversation_id: uuid.openapi({ description: 'Conversation id (UUID).' }) });

/** Spec 2.3, every field always present. */
export const conversationSchema = z
  .object({
    ...resourceFields,
    title: z.string().nullable(),
    project_id: uuid.nullable().openapi({ description: 'The project the conversation was started in.' }),
    active_leaf_id: uuid.nullable(),
    schedule_id: uuid.nullable().openapi({ description: 'Set for conversations run by a scheduled task.' }),
    forked_from_conversation_id: uuid.nullable(),
    message_count: z.number().int(),
    last_message_at: timestamp.nullable(),
    active_run_id: z.string().nullable(),
    active_run_at: timestamp.nullable(),
    active_workflow_run_id: z.string().nullable(),
    mod_conversation_id: z.string().nullable(),
    skill_id: uuid.nullable().openapi({
      description:
        'The conversation’s own skill: its body is the system context of the conversation’s chat turns, before the knowledge of its projects (for each turn’s user who can read it).',
    }),
    tools: z.array(z.string()).nullable().openapi({
      description:
        'The tools the conversation’s chat turns may offer (a run’s `tools` and its projects’ `chat_tools` narrow further: a turn offers what all of them allow); null: no narrowing.',
    }),
    approval_tools: z.array(z.string()).openapi({
      description:
        'Tools whose calls wait for the caller’s approval in this conversation’s chat turns (besides the tools of connectors marked `needs_approval` or listing them in `approval_tools`); `[]`: none.',
    }),
    ...lifecycleFields,
  })
  .strict()
  .openapi('Conversation');

/** A conversation as a list shows it: with what the caller may do to it. */
export const conversationListItemSchema = conversationSchema
  .extend({
    shared: z.boolean().openapi({ description: 'True when someone besides the creator can reach it: a grant, or general access wider than private.' }),
    can_edit: z.boolean().openapi({ description: 'The caller may change it (editor, owner, or organization admin).' }),
    can_delete: z.boolean().openapi({ description: 'The caller may delete it (its owner, or organization owner/admin).' }),
  })
  .strict()
  .openapi('ConversationListItem');

export const createConversationBody = z
  .object({
    organization_id: z.string().min(1).max(64),
    title: singleLine(300).nullable().optional(),
    project_id: uuid
      .optional()
      .openapi({ description: 'Start the conversation inside this project (the caller must be able to edit it).' })
      .openapi({ [CHECKED_BY_SERVER]: true }),
    visibility: writableVisibilitySchema.optional().openapi({ description: 'General access; default `private`.' }),
  })
  .strict()
  .openapi('CreateConversation');

export const updateConversationBody = z
  .object({
    title: singleLine(300).nullable().optional(),
    active_leaf_id: uuid
      .optional()
      .openapi({ description: 'Switch the active branch: a message of this conversation (400 otherwise).' })
      .openapi({ [CHECKED_BY_SERVER]: true }),
    skill_id: uuid
      .nullable()
      .optional()
      .openapi({
        description:
          'A live skill of the conversation’s organization that the caller can read (else 400): the system context of its chat turns. null clears it.',
      })
      .openapi({ [CHECKED_BY_SERVER]: true }),
    tools: chatToolNames
      .nullable()
      .optional()
      .openapi({
        description:
          'Narrow the tools the conversation’s chat turns may offer to these names (`[]`: none), each a built-in tool or `<namespace>__<tool>` of an MCP connector of the organization you can use (else 400 naming the entry), as a run’s `tools`. null: no narrowing.',
      })
      .openapi({ [CHECKED_BY_SERVER]: true }),
    approval_tools: chatToolNames
      .optional()
      .openapi({
        description:
          'Tools (named as in `tools`; else 400 naming the entry) whose calls in this conversation’s chat turns stop the turn in `awaiting_approval` until the caller approves or rejects them (POST /conversations/{conversation_id}/run/approvals). `[]`: none (the default).',
      })
      .openapi({ [CHECKED_BY_SERVER]: true }),
  })
  .strict()
  .refine((body) => Object.keys(body).length > 0, 'send at least one of: title, active_leaf_id, skill_id, tools, approval_tools')
  .openapi({ minProperties: 1 })
  .openapi('UpdateConversation', { description: 'Sparse. General access is changed through PATCH /access/chat_conversation/{id}.' });

const uuidList = z
  .string()
  .max(3700)
  .transform((value, ctx) => {
    const ids = value
      .split(',')
      .map((id) => id.trim())
      .filter(Boolean);
    for (const id of ids) {
      if (!uuid.safeParse(id).success) {
        ctx.addIssue({ code: 'custom', message: `"${id}" is not a UUID (expected comma-separated UUIDs)` });
        return z.NEVER;
      }
    }
    if (ids.length === 0 || ids.length > 100) {
      ctx.addIssue({ code: 'custom', message: 'expected 1 to 100 comma-separated UUIDs' });
      return z.NEVER;
    }
    return ids;
  });

export const conversationFilters = ['mine', 'shared', 'involved', 'all'] as const;

export const listConversationsQuery = z.object({
  organization_id: z.string().min(1).max(64).openapi({ description: 'Organization whose conversations to list (the caller must be a member).' }),
  filter: z
    .enum(conversationFilters)
    .default('all')
    .openapi({
      description: [
        'Which readable conversations to list (default `all`):',
        '`mine` — created by the caller;',
        '`shared` — created by someone else and granted to the caller by a per-user grant on the conversation;',
        '`involved` — `mine` plus `shared` (the caller created it or was personally granted it);',
        '`all` — every conversation the caller can read: also those open to the workspace, reached through a project, or readable as an organization admin.',
      ].join(' '),
    }),
  include_scheduled: queryBoolean
    .default(false)
    .openapi({ description: 'Include conversations run by a scheduled task (`schedule_id` set); hidden by default.' }),
  deleted: queryBoolean
    .default(false)
    .openapi({ description: '`true` lists only soft-deleted conversations (that the caller could restore or read); default lists only live ones.' }),
  search: z.string().trim().min(1).max(200).optional().openapi({ description: 'Case-insensitive substring of the title.' }),
  created_by: userId.optional().openapi({ description: 'Only conversations created by this user id.' }),
  visibility: visibilitySchema.optional().openapi({ description: 'Only conversations with this general access visibility.' }),
  project_ids: uuidList.optional().openapi({
    type: 'string',
    description: 'Comma-separated project UUIDs (1 to 100): only conversations in one of these projects.',
    pattern: commaSeparated(UUID_PATTERN),
  }),
  ...pageQuery,
});

export const conversationPage = pageOf(conversationListItemSchema).openapi('ConversationPage');
