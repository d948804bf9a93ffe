import type { ResourceTypeDeclaration } from '../access/index.ts';
import { pageQuery, presentPage } from '../core/pagination.ts';
import { resource } from '../http/authorize.ts';
import { defineRoute, type AnyRoute } from '../http/route.ts';
import { z } from '../core/zod.ts';
import { itemNames, projectItemTypes } from './item-routes.ts';
import { listItemProjects } from './membership.ts';
import { presentProject } from './presenter.ts';
import { projectPage } from './schema.ts';

/**
 * `GET /<collection>/{id}/projects` for every resource type that can be filed in projects: the
 * live projects holding the item that the caller can read (404 when the item is unreadable).
 * Declared here, with the query that answers them, so the item domains never import projects
 * (projects know their items, not the other way round); each keeps its own tag in the document.
 */
export const itemProjectsRoutes = (types: readonly ResourceTypeDeclaration[]): AnyRoute[] => projectItemTypes(types).map(itemProjectsRoute);

function itemProjectsRoute(declaration: ResourceTypeDeclaration): AnyRoute {
  const { type, noun, api } = declaration;
  const { idField: idParam, Name } = itemNames(declaration);
  return defineRoute({
    method: 'get',
    path: `${api.path}/{${idParam}}/projects`,
    operationId: `list${Name}Projects`,
    summary: `Live projects holding the ${noun} that the caller can read`,
    tag: api.tag,
    params: api.idParams,
    query: z.object({ ...pageQuery }),
    response: { status: 200, description: 'A page of projects', schema: projectPage },
    errors: [404],
    authorize: resource(type, 'read', idParam),
    handler: async ({ params, query, actor, deps }) => presentPage(await listItemProjects(deps, actor, type, params[idParam]!, query), presentProject),
  });
}
