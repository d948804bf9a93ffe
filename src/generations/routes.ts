import { presentPage } from '../core/pagination.ts';
import { allOf, anyOf, creatorOrAdmin, linked, listing, signedIn, within } from '../http/authorize.ts';
import { type AnyRoute, defineRoute } from '../http/route.ts';
import { presentGeneration } from './presenter.ts';
import { listPublicModels, publicModelsSchema } from './public-models.ts';
import { quoteGeneration } from './quote.ts';
import {
  createGenerationBody,
  generationEnvelope,
  generationIdParams,
  generationPage,
  listGenerationsQuery,
  quoteGenerationBody,
  quoteSchema,
  updateGenerationBody,
} from './schema.ts';
import { createGeneration, getGeneration, listGenerations, updateGeneration } from './service.ts';

const tag = 'Generations';
const readers =
  'its creator, the organization’s admins, and whoever can read the conversation, canvas or project it was made for; 404 for anyone else (the same as a missing id)';
const generationReaders = anyOf(creatorOrAdmin('generation'), linked('generation', ['chat_conversation', 'canvas', 'project'], 'read'));

/** Generations (spec §4.11) and the public model list. */
export const generationRoutes: AnyRoute[] = [
  defineRoute({
    method: 'get',
    path: '/models/public',
    operationId: 'listPublicModels',
    tag,
    summary: 'Every chat and generation model with its kind, provider and credit prices',
    description:
      'The catalogs that quotes and holds read (one source of prices): chat models priced per 1,000 input and output tokens, generation models per unit (an image, a second, a frame, 1,000 characters or tokens) with the most units one generation may use. An organization’s own chat-model prices and enablement are at GET /chat-models/available.',
    response: { status: 200, description: 'The models', schema: publicModelsSchema },
    authorize: signedIn('the model catalog is the same for every signed-in caller'),
    handler: async ({ deps }) => listPublicModels(deps),
  }),
  defineRoute({
    method: 'post',
    path: '/generations/quote',
    operationId: 'quoteGeneration',
    tag,
    summary: 'Quote a generation: the credit ceiling and how it is computed',
    description:
      'The model’s credits per unit × the units the request may use (images: 1; seconds: `duration_seconds`; frames: `frames`; speech: the prompt’s characters; text: `max_characters` or `max_tokens`), up to the model’s `max_units` (400 on `parameters` beyond). Nothing is held. The model defaults to the sandbox model of the kind.',
    body: quoteGenerationBody,
    response: { status: 200, description: 'The quote', schema: quoteSchema },
    errors: [403],
    authorize: within('body'),
    handler: async ({ body, deps }) => {
      const quote = await quoteGeneration(deps, body);
      return {
        kind: body.kind,
        model: quote.model.id,
        credits: quote.credits,
        units: quote.units,
        unit: quote.model.unit,
        credits_per_unit: quote.model.credits_per_unit,
      };
    },
  }),
  defineRoute({
    method: 'post',
    path: '/generations',
    operationId: 'createGeneration',
    idempotent: {},
    tag,
    summary: 'Start a generation (image, audio, video or text) on a worker',
    description:
      'Quotes it, then in one transaction holds the quote (402 when the balance or the caller’s spending limit cannot cover it; 400 on `max_credits` when the quote is higher — nothing held) and enqueues it: 201 with status `queued`. A worker runs it (`running`, with `progress` where the provider reports it) and ends it `succeeded` — the files stored as assets (`asset_ids`; each asset’s `generation_id`, `origin_conversation_id`, `origin_canvas_id` set; enrichment follows as for any asset), the credits the provider reported captured and the rest released, all in one transaction — or `failed` with `error` and the hold released. `conversation_id` and `canvas_id` must be readable in the organization and `project_id` editable (400 naming the field). Needs `resources.create`.',
    body: createGenerationBody,
    response: { status: 201, description: 'The queued generation', schema: generationEnvelope },
    errors: [402, 403],
    authorize: within('body', 'resources.create'),
    handler: async ({ body, actor, deps, ctx }) => ({
      generation: presentGeneration(await createGeneration(deps, actor, body, ctx.state.requestId as string | undefined)),
    }),
  }),
  defineRoute({
    method: 'get',
    path: '/generations',
    operationId: 'listGenerations',
    tag,
    summary: 'List the generations the caller can read',
    description: `Newest first, keyset paged; filter by \`kind\`, \`status\`, \`conversation_id\`, \`project_id\`. Readable: ${readers}.`,
    query: listGenerationsQuery,
    response: { status: 200, description: 'A page of generations', schema: generationPage },
    authorize: listing('query'),
    handler: async ({ query, actor, deps }) => presentPage(await listGenerations(deps, actor, query), presentGeneration),
  }),
  defineRoute({
    method: 'get',
    path: '/generations/{generation_id}',
    operationId: 'getGeneration',
    tag,
    summary: 'Get a generation',
    params: generationIdParams,
    response: { status: 200, description: 'The generation', schema: generationEnvelope },
    errors: [404],
    authorize: generationReaders,
    handler: async ({ params, actor, deps }) => ({ generation: presentGeneration(await getGeneration(deps, actor, params.generation_id)) }),
  }),
  defineRoute({
    method: 'patch',
    path: '/generations/{generation_id}',
    operationId: 'updateGeneration',
    tag,
    summary: 'Rename or cancel a generation',
    description:
      '`status: "canceled"` cancels a queued or running generation: its hold is released at once and its worker aborts the provider call within a second (409 once it has ended). Only its creator or an organization admin (403 for other readers).',
    params: generationIdParams,
    body: updateGenerationBody,
    response: { status: 200, description: 'The generation', schema: generationEnvelope },
    errors: [403, 404, 409],
    authorize: allOf(generationReaders, creatorOrAdmin('generation')),
    handler: async ({ params, body, actor, deps }) => ({ generation: presentGeneration(await updateGeneration(deps, actor, params.generation_id, body)) }),
  }),
];
