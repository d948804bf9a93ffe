import { signedIn } from '../http/authorize.ts';
import { type AnyRoute, defineRoute } from '../http/route.ts';
import { listPublicModels, publicModelsSchema } from './public-models.ts';

const tag = 'Generations';

/** Generations (spec §4.11): the public model list. The generations themselves come with their own issue slice. */
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
];
