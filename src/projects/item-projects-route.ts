import type { ZodObject, ZodString } from 'zod';
import type { ProjectItemType } from '../access/index.ts';
import { pageQuery } from '../core/pagination.ts';
import { resource } from '../http/authorize.ts';
import { defineRoute, type AnyRoute } from '../http/route.ts';
import { z } from '../core/zod.ts';
import { listItemProjects } from './membership.ts';
import { presentProject } from './presenter.ts';
import { projectPage } from './schema.ts';

/**
 * `GET /<collection>/{id}/projects` for every resource type that can be filed in projects: the
 * live projects holding the item that the caller can read (404 when the item is unreadable).
 */
export function itemProjectsRoute(spec: {
  type: ProjectItemType;
  path: string;
  idParams: ZodObject<Record<string, ZodString>>;
  noun: string;
  operationId: string;
  tag: string;
}): AnyRoute {
  const idParam = Object.keys(spec.idParams.shape)[0]!;
  if (!spec.path.endsWith(`/{${idParam}}/projects`)) throw new Error(`${spec.operationId}: path ${spec.path} does not end in /{${idParam}}/projects`);
  return defineRoute({
    method: 'get',
    path: spec.path,
    operationId: spec.operationId,
    summary: `Live projects holding the ${spec.noun} that the caller can read`,
    tag: spec.tag,
    params: spec.idParams,
    query: z.object({ ...pageQuery }),
    response: { status: 200, description: 'A page of projects', schema: projectPage },
    errors: [404],
    authorize: resource(spec.type, 'read', idParam),
    handler: async ({ params, query, actor, deps }) => {
      const page = await listItemProjects(deps, actor, spec.type, params[idParam]!, query);
      return { items: page.items.map(presentProject), next_cursor: page.next_cursor };
    },
  });
}
