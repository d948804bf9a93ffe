import { signedIn } from '../http/authorize.ts';
import { type AnyRoute, defineRoute } from '../http/route.ts';
import { meSchema } from './schema.ts';
import { whoAmI } from './service.ts';

/** Who the token is: the first call of a new client (CONVENTIONS §4 `GET /me`). */
export const meRoutes: AnyRoute[] = [
  defineRoute({
    method: 'get',
    path: '/me',
    operationId: 'getMe',
    summary: 'The caller: their user, their organizations with role and permissions, and the balances they may see',
    description:
      'The user row is created from the token on its first request, so this answers for any valid token (a new user belongs to no organization yet: create one with POST /organizations).',
    tag: 'Me',
    response: { status: 200, description: 'The caller', schema: meSchema },
    authorize: signedIn('a caller reads only themselves'),
    handler: async ({ actor, deps }) => whoAmI(deps, actor),
  }),
];
