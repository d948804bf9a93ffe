import { accessRecordRoute } from '../http/access-record-route.ts';
import type { AnyRoute } from '../http/route.ts';
import { resourceRoutes } from '../http/resource-routes.ts';
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
  type: 'chat_conversation',
  tag,
  path,
  idParams: conversationIdParams,
  noun: 'conversation',
  schema: conversationSchema,
  present: presentConversation,
});

/** The resource part of conversations (spec 2.3, 4.10); messages, fork and runs come later. */
export const conversationRoutes: AnyRoute[] = [
  conversation.create({
    path: '/conversations',
    operationId: 'createConversation',
    summary: 'Start a conversation',
    description:
      'The caller becomes its owner. Needs the organization permission `resources.create`; with `project_id` the conversation is filed in that project (the caller must be able to edit it, else 400 on `project_id`). A non-member organization is 404.',
    body: createConversationBody,
    errors: [],
    run: createConversation,
  }),
  conversation.list({
    path: '/conversations',
    operationId: 'listConversations',
    summary: 'List the conversations the caller can read',
    description:
      'Newest first (`created_at`, then `id`), keyset paged: rows created while paging never shift a page. Unreadable conversations are filtered in the query. A caller who is not a member of the organization gets an empty page. Items carry the caller’s list extras `shared`, `can_edit`, `can_delete`.',
    query: listConversationsQuery,
    page: conversationPage,
    run: (deps, actor, query) => listConversations(deps.db, actor, query),
    presentItem: presentConversationListItem,
  }),
  conversation.get({
    path: '/conversations/{conversation_id}',
    operationId: 'getConversation',
    summary: 'Get a conversation (also a deleted one, showing `deleted_at`)',
    run: getConversation,
  }),
  conversation.update({
    path: '/conversations/{conversation_id}',
    operationId: 'updateConversation',
    summary: 'Rename a conversation',
    description: 'Needs the editor role. A deleted conversation answers 409 until restored.',
    body: updateConversationBody,
    run: updateConversation,
  }),
  conversation.remove({
    path: '/conversations/{conversation_id}',
    operationId: 'deleteConversation',
    summary: 'Delete a conversation (soft delete; restorable)',
    description: 'Needs the owner role (creator, or organization owner/admin). Deleting a deleted conversation is a no-op 204.',
    run: deleteConversation,
  }),
  conversation.restore({
    path: '/conversations/{conversation_id}/restore',
    operationId: 'restoreConversation',
    summary: 'Restore a deleted conversation',
    description: 'Needs the owner role. Restoring a live conversation returns it unchanged.',
    run: restoreConversation,
  }),
  accessRecordRoute({
    type: 'chat_conversation',
    path: '/conversations/{conversation_id}/access',
    idParams: conversationIdParams,
    noun: 'conversation',
    operationId: 'getConversationAccess',
    tag,
  }),
];
