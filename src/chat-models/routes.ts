import { presentPage } from '../core/pagination.ts';
import { listing, member, signedIn, within } from '../http/authorize.ts';
import { defineRoute, type AnyRoute } from '../http/route.ts';
import { presentAvailableChatModel, presentChatModel, presentChatModelCopy, presentChatModelListItem } from './presenter.ts';
import {
  availableChatModelPage,
  availableChatModelsQuery,
  chatModelCopyEnvelope,
  chatModelCopyQuery,
  chatModelEnvelope,
  chatModelIdParams,
  chatModelPage,
  listChatModelsQuery,
  PRICE_OVERRIDE_MAX_FACTOR,
  putChatModelCopyBody,
} from './schema.ts';
import { getChatModel, getChatModelCopy, listAvailableChatModels, listChatModels, putChatModelCopy } from './service.ts';

const tag = 'Chat models';

/** Literal paths (`/chat-models/available`) come before `/chat-models/{chat_model_id}`, which would match them. */
export const chatModelRoutes: AnyRoute[] = [
  defineRoute({
    method: 'get',
    path: '/chat-models',
    operationId: 'listChatModels',
    summary: 'List the chat-model catalog',
    description:
      'Every model of the catalog by id, keyset paged: its provider, context window and credit prices per 1,000 input/output tokens. With `organization_id`, each entry also says whether it is `enabled` in that organization (otherwise `enabled` is null); a caller outside that organization gets an empty page.',
    tag,
    query: listChatModelsQuery,
    response: { status: 200, description: 'A page of chat models', schema: chatModelPage },
    authorize: listing(),
    handler: async ({ query, actor, deps }) => presentPage(await listChatModels(deps, actor, query), presentChatModelListItem),
  }),
  defineRoute({
    method: 'get',
    path: '/chat-models/available',
    operationId: 'listAvailableChatModels',
    summary: 'List the chat models enabled in an organization',
    description:
      'The models enabled in the organization (its copy’s `enabled`, else the catalog’s `enabled_by_default`), by id, keyset paged, with the effective display name, default parameters and prices. A caller outside the organization gets an empty page.',
    tag,
    query: availableChatModelsQuery,
    response: { status: 200, description: 'A page of available chat models', schema: availableChatModelPage },
    authorize: listing(),
    handler: async ({ query, actor, deps }) => presentPage(await listAvailableChatModels(deps, actor, query), presentAvailableChatModel),
  }),
  defineRoute({
    method: 'get',
    path: '/chat-models/{chat_model_id}',
    operationId: 'getChatModel',
    summary: 'Get a chat model of the catalog',
    description: 'The catalog is the same for everyone, so any signed-in caller may read an entry; 404 for an unknown id.',
    tag,
    params: chatModelIdParams,
    response: { status: 200, description: 'The chat model', schema: chatModelEnvelope },
    errors: [404],
    authorize: signedIn('the catalog is public to every signed-in caller'),
    handler: async ({ params, deps }) => ({ chat_model: presentChatModel(await getChatModel(deps, params.chat_model_id)) }),
  }),
  defineRoute({
    method: 'get',
    path: '/chat-models/{chat_model_id}/copy',
    operationId: 'getChatModelCopy',
    summary: 'Get an organization’s copy of a chat model',
    description:
      'What the organization set for the model (`customized: false` and catalog values when it set nothing) and the effective values. Any member may read it; a caller outside the organization gets 404, the same answer as for an unknown model (the copy belongs to the organization).',
    tag,
    params: chatModelIdParams,
    query: chatModelCopyQuery,
    response: { status: 200, description: 'The organization’s copy', schema: chatModelCopyEnvelope },
    errors: [404],
    authorize: member(undefined, { in: 'query' }),
    handler: async ({ params, query, actor, deps }) => ({
      chat_model_copy: presentChatModelCopy(await getChatModelCopy(deps, actor, params.chat_model_id, query.organization_id)),
    }),
  }),
  defineRoute({
    method: 'put',
    path: '/chat-models/{chat_model_id}/copy',
    operationId: 'putChatModelCopy',
    summary: 'Set an organization’s copy of a chat model',
    description: `Replaces the copy: \`enabled\`, and optionally \`display_name\`, \`default_parameters\` (\`temperature\` 0–2, \`max_tokens\` at most the context window, \`top_p\` 0–1) and price overrides; an optional field omitted or null returns to the catalog value. A price override lies between the catalog price and ${PRICE_OVERRIDE_MAX_FACTOR} times it (400 naming the field). Recorded in the activity feed (\`chat_model_copy.updated\`). 404 for an unknown model (to members only: the organization is checked first).`,
    tag,
    params: chatModelIdParams,
    body: putChatModelCopyBody,
    response: { status: 200, description: 'The organization’s copy', schema: chatModelCopyEnvelope },
    errors: [403, 404],
    authorize: within('body', 'chat_models.manage'),
    handler: async ({ params, body, actor, deps }) => ({
      chat_model_copy: presentChatModelCopy(await putChatModelCopy(deps, actor, params.chat_model_id, body)),
    }),
  }),
];
