import { organizationRoutes } from '../organizations/routes.ts';
import { serviceRoutes } from '../service/routes.ts';
import type { AnyRoute } from './route.ts';

/** Open without a token. */
export const plumbingRoutes: readonly AnyRoute[] = serviceRoutes;

/**
 * Every operation of the API, by domain. Order matters where paths overlap: a literal segment
 * (`/organizations/available-slug`) is listed before the parameter it would otherwise match.
 */
export const apiRoutes: readonly AnyRoute[] = [...organizationRoutes];
