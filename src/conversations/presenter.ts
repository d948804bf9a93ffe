import { presentLifecycle, presentResourceFields, resourceColumnNames, type ResourceColumns } from '../access/index.ts';
import type { z } from '../core/zod.ts';
import type { conversationListItemSchema, conversationSchema } from './schema.ts';
import { iso } from '../core/present.ts';

export interface ConversationRow extends ResourceColumns {
  title: string | null;
  project_id: string | null;
  active_leaf_id: string | null;
  schedule_id: string | null;
  forked_from_conversation_id: string | null;
  message_count: number;
  last_message_at: Date | null;
  active_run_id: string | null;
  active_run_at: Date | null;
  active_workflow_run_id: string | null;
  mod_conversation_id: string | null;
  skill_id: string | null;
  tools: string[] | null;
  approval_tools: string[];
}

/** Columns of a conversation row. */
export const conversationColumnNames = [
  ...resourceColumnNames,
  'title',
  'project_id',
  'active_leaf_id',
  'schedule_id',
  'forked_from_conversation_id',
  'message_count',
  'last_message_at',
  'active_run_id',
  'active_run_at',
  'active_workflow_run_id',
  'mod_conversation_id',
  'skill_id',
  'tools',
  'approval_tools',
] as const;

/** Columns of a conversation row, qualified for joins. */
export const conversationColumns = (alias = 'c') => conversationColumnNames.map((column) => `${alias}.${column}`);

export function presentConversation(row: ConversationRow): z.input<typeof conversationSchema> {
  return {
    ...presentResourceFields(row),
    title: row.title,
    project_id: row.project_id,
    active_leaf_id: row.active_leaf_id,
    schedule_id: row.schedule_id,
    forked_from_conversation_id: row.forked_from_conversation_id,
    message_count: row.message_count,
    last_message_at: iso(row.last_message_at),
    active_run_id: row.active_run_id,
    active_run_at: iso(row.active_run_at),
    active_workflow_run_id: row.active_workflow_run_id,
    mod_conversation_id: row.mod_conversation_id,
    skill_id: row.skill_id,
    tools: row.tools,
    approval_tools: row.approval_tools,
    ...presentLifecycle(row),
  };
}

export interface ListExtras {
  shared: boolean;
  can_edit: boolean;
  can_delete: boolean;
}

export function presentConversationListItem(row: ConversationRow & ListExtras): z.input<typeof conversationListItemSchema> {
  return { ...presentConversation(row), shared: row.shared, can_edit: row.can_edit, can_delete: row.can_delete };
}
