import { defineResourceType } from '../access/index.ts';
import { selectListExtras, withListExtras } from './list.ts';
import { conversationColumns, presentConversation, presentConversationListItem, type ConversationRow } from './presenter.ts';
import { conversationIdParams, conversationListItemSchema, conversationSchema } from './schema.ts';

declare module '../access/index.ts' {
  interface ResourceTypeNames {
    chat_conversation: true;
  }
}

/** A conversation (a chat): filed in projects; passes its audience on to the assets made in it and those it references. */
export const conversationResource = defineResourceType<ConversationRow>({
  type: 'chat_conversation',
  table: 'conversations',
  noun: 'conversation',
  activity: 'conversation',
  titleColumn: 'title',
  kind: 'chat',
  api: { path: '/conversations', idParams: conversationIdParams, tag: 'Conversations', schema: conversationSchema, present: presentConversation },
  // In projects, as in its own list: with the list extras of spec 2.3.
  project: {
    schema: conversationListItemSchema,
    columns: conversationColumns,
    selectListExtras,
    present: (row) => presentConversationListItem(withListExtras(row)),
  },
  // Scheduled runs would flood the library; they are listed under their scheduled task.
  library: { type: 'conversation', where: 't.schedule_id IS NULL' },
  inventory: { project: 'project_id' },
});
