import type { ZodType } from 'zod';
import { jobConsole } from '../http/authorize.ts';
import { defineRoute, errorsOf, type HandlerInput, type Route } from '../http/route.ts';
import { type ConsoleCaller, consoleCaller } from './access.ts';

/** Where a console request names its organization (an operator may leave it out: every organization). */
type NamedIn = 'query' | 'body' | 'body.filter';

const organizationOf = (from: NamedIn, input: HandlerInput<ZodType, ZodType, ZodType>): string | undefined => {
  const named = (from === 'query' ? input.query : from === 'body' ? input.body : (input.body as { filter?: unknown } | undefined)?.filter) as
    | { organization_id?: string }
    | undefined;
  return named?.organization_id;
};

/**
 * A job-console operation over many jobs (lists, health, lookups, bulk actions, pauses). Who may
 * call it is the console's rule: operators across organizations, an organization's `jobs.manage`
 * holders within the organization the request names (403 otherwise). The handler gets that caller
 * resolved; `errors` lists what the operation answers besides the 403.
 */
export function consoleRoute<P extends ZodType = ZodType, Q extends ZodType = ZodType, B extends ZodType = ZodType, R extends ZodType = ZodType>(
  from: NamedIn,
  route: Omit<Route<P, Q, B, R>, 'tag' | 'authorize' | 'handler'> & {
    handler(input: HandlerInput<P, Q, B> & { caller: ConsoleCaller }): ReturnType<Route<P, Q, B, R>['handler']>;
  },
): Route<P, Q, B, R> {
  return defineRoute({
    ...route,
    tag: 'Operations',
    authorize: jobConsole(from),
    errors: errorsOf([403], route.errors),
    handler: async (input) =>
      route.handler({ ...input, caller: await consoleCaller(input.actor, organizationOf(from, input as HandlerInput<ZodType, ZodType, ZodType>)) }),
  });
}
