import { accessRecordRoute } from '../access/access-record-route.ts';
import type { AnyRoute } from '../http/route.ts';
import { resourceRoutes } from '../http/resource-routes.ts';
import { itemProjectsRoute } from '../projects/item-projects-route.ts';
import { listConversations } from './list.ts';
import { presentConversation, presentConversationListItem } from './presenter.ts';
import {
  conversationIdParams,
  conversationPage,
  conversationSchema,
  createConversationBody,
  listConversationsQuery,
  updateConversationBody,
} from './schema.ts';
import { createConversation, deleteConversation, getConversation, restoreConversation, updateConversation } from './service.ts';

const tag = 'Conversations';
const path = '/conversations';
const conversation = resourceRoutes({
  tag,
  path,
  idParams: conversationIdParams,
  name: 'Conversation',
  noun: 'conversation',
  schema: conversationSchema,
  present: presentConversation,
});

/** The resource part of conversations (spec 2.3, 4.10); messages, fork and runs come later. */
export const conversationRoutes: AnyRoute[] = [
  conversation.create({
    summary: 'Start a conversation',
    description:
      'The caller becomes its owner. Needs the organization permission `resources.create`; with `project_id` the conversation is filed in that project (the caller must be able to edit it, else 400 on `project_id`). A non-member organization is 404.',
    body: createConversationBody,
    errors: [403, 404],
    run: createConversation,
  }),
  conversation.list({
    summary: 'List the conversations the caller can read',
    description:
      'Newest first (`created_at`, then `id`), keyset paged: rows created while paging never shift a page. Unreadable conversations are filtered in the query. A caller who is not a member of the organization gets an empty page. Items carry the caller’s list extras `shared`, `can_edit`, `can_delete`.',
    query: listConversationsQuery,
    page: conversationPage,
    run: (deps, caller, query) => listConversations(deps.db, caller, query),
    presentItem: presentConversationListItem,
  }),
  conversation.get({ summary: 'Get a conversation (also a deleted one, showing `deleted_at`)', run: getConversation }),
  conversation.update({
    summary: 'Rename a conversation',
    description: 'Needs the editor role. A deleted conversation answers 409 until restored.',
    body: updateConversationBody,
    run: updateConversation,
  }),
  conversation.remove({
    summary: 'Delete a conversation (soft delete; restorable)',
    description: 'Needs the owner role (creator, or organization owner/admin). Deleting a deleted conversation is a no-op 204.',
    run: deleteConversation,
  }),
  conversation.restore({
    summary: 'Restore a deleted conversation',
    description: 'Needs the owner role. Restoring a live conversation returns it unchanged.',
    run: restoreConversation,
  }),
  itemProjectsRoute({ type: 'chat_conversation', path, idParams: conversationIdParams, noun: 'conversation', operationId: 'listConversationProjects', tag }),
  accessRecordRoute({ type: 'chat_conversation', path, idParams: conversationIdParams, noun: 'conversation', operationId: 'getConversationAccess', tag }),
];
