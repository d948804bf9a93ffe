import { accessRecordSchema, getAccessRecord } from '../access/index.ts';
import { defineRoute, type AnyRoute } from '../http/route.ts';
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

export const conversationRoutes: AnyRoute[] = [
  defineRoute({
    method: 'post',
    path: '/conversations',
    operationId: 'createConversation',
    summary: 'Start a conversation',
    description: 'The caller becomes its owner. Needs the organization permission `resources.create`; with `project_id` the conversation is filed in that project (the caller must be able to edit it, else 400 on `project_id`). A non-member organization is 404.',
    tag,
    body: createConversationBody,
    response: { status: 201, description: 'The new conversation', schema: conversationSchema },
    errors: [403, 404],
    handler: async ({ body, caller, deps }) => presentConversation(await createConversation(deps, caller, body)),
  }),
  defineRoute({
    method: 'get',
    path: '/conversations',
    operationId: 'listConversations',
    summary: 'List the conversations the caller can read',
    description: 'Newest first (`created_at`, then `id`), keyset paged: rows created while paging never shift a page. Unreadable conversations are filtered in the query. A caller who is not a member of the organization gets an empty page.',
    tag,
    query: listConversationsQuery,
    response: { status: 200, description: 'A page of conversations with the caller’s list extras', schema: conversationPage },
    handler: async ({ query, caller, deps }) => {
      const page = await listConversations(deps.db, caller, query);
      return { items: page.items.map(presentConversationListItem), next_cursor: page.next_cursor };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/conversations/{conversation_id}',
    operationId: 'getConversation',
    summary: 'Get a conversation (also a deleted one, showing `deleted_at`)',
    tag,
    params: conversationIdParams,
    response: { status: 200, description: 'The conversation', schema: conversationSchema },
    errors: [404],
    handler: async ({ params, caller, deps }) => presentConversation(await getConversation(deps, caller, params.conversation_id)),
  }),
  defineRoute({
    method: 'patch',
    path: '/conversations/{conversation_id}',
    operationId: 'updateConversation',
    summary: 'Rename a conversation',
    description: 'Needs the editor role. A deleted conversation answers 409 until restored.',
    tag,
    params: conversationIdParams,
    body: updateConversationBody,
    response: { status: 200, description: 'The updated conversation', schema: conversationSchema },
    errors: [403, 404, 409],
    handler: async ({ params, body, caller, deps }) => presentConversation(await updateConversation(deps, caller, params.conversation_id, body)),
  }),
  defineRoute({
    method: 'delete',
    path: '/conversations/{conversation_id}',
    operationId: 'deleteConversation',
    summary: 'Delete a conversation (soft delete; restorable)',
    description: 'Needs the owner role (creator, or organization owner/admin). Deleting a deleted conversation is a no-op 204.',
    tag,
    params: conversationIdParams,
    response: { status: 204, description: 'Deleted' },
    errors: [403, 404],
    handler: async ({ params, caller, deps }) => deleteConversation(deps, caller, params.conversation_id),
  }),
  defineRoute({
    method: 'post',
    path: '/conversations/{conversation_id}/restore',
    operationId: 'restoreConversation',
    summary: 'Restore a deleted conversation',
    description: 'Needs the owner role. Restoring a live conversation returns it unchanged.',
    tag,
    params: conversationIdParams,
    response: { status: 200, description: 'The restored conversation', schema: conversationSchema },
    errors: [403, 404],
    handler: async ({ params, caller, deps }) => presentConversation(await restoreConversation(deps, caller, params.conversation_id)),
  }),
  itemProjectsRoute({ type: 'chat_conversation', collection: 'conversations', idParam: 'conversation_id', noun: 'conversation', operationId: 'listConversationProjects', tag }),
  defineRoute({
    method: 'get',
    path: '/conversations/{conversation_id}/access',
    operationId: 'getConversationAccess',
    summary: 'Get the caller’s access record for a conversation',
    tag,
    params: conversationIdParams,
    response: { status: 200, description: 'The access record (spec 2.7)', schema: accessRecordSchema },
    errors: [404],
    handler: async ({ params, caller, deps }) => getAccessRecord(deps, caller, 'chat_conversation', params.conversation_id),
  }),
];
