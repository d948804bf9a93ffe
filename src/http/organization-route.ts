import type { ZodType } from 'zod';
import type { PermissionNeed } from '../access/actor.ts';
import { organizationIdParams } from '../core/zod.ts';
import { type Authorization, member } from './authorize.ts';
import { defineRoute, errorsOf, type Route } from './route.ts';

/** What an organization's operation declares: a route, minus what the organization in its path decides. */
export type OrganizationRoute<P extends ZodType, Q extends ZodType, B extends ZodType, R extends ZodType> = Omit<Route<P, Q, B, R>, 'params' | 'authorize'> & {
  /** More path parameters than the organization's (a member, an invitation). */
  params?: P;
  /** What a member needs (403 without it); none: every member may. */
  permission?: PermissionNeed;
  /** Who may call it, when it takes more than membership with `permission` (declare a 403 it answers in `errors`). */
  authorize?: Authorization;
};

/**
 * An operation of one organization, at `/organizations/{organization_id}/…`. Unless it declares its
 * own `authorize` (an invitee may read their invitation), only the organization's members reach it:
 * anyone else gets 404 (an organization is not revealed to outsiders) and a member without the
 * operation's `permission` 403. Those two statuses are not declared at the call site: `errors` lists
 * what the operation answers besides them.
 */
export function organizationRoute<
  P extends ZodType = typeof organizationIdParams,
  Q extends ZodType = ZodType,
  B extends ZodType = ZodType,
  R extends ZodType = ZodType,
>(route: OrganizationRoute<P, Q, B, R>): Route<P, Q, B, R> {
  if (!route.path.startsWith('/organizations/{organization_id}/') && route.path !== '/organizations/{organization_id}') {
    throw new Error(`${route.operationId}: path ${route.path} is not below /organizations/{organization_id}`);
  }
  const { permission, ...operation } = route;
  return defineRoute({
    ...operation,
    params: route.params ?? (organizationIdParams as unknown as P),
    errors: errorsOf(permission === undefined ? [404] : [403, 404], route.errors),
    authorize: route.authorize ?? member(permission),
  });
}
