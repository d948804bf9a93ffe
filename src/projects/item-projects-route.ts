import { defineRoute } from '../http/route.ts';
import { pageQuery } from '../http/pagination.ts';
import { uuid, z } from '../http/zod.ts';
import type { ProjectItemType } from '../access/index.ts';
import { listItemProjects } from './membership.ts';
import { presentProject } from './presenter.ts';
import { projectPage } from './schema.ts';

/**
 * `GET /<items>/{<item>_id}/projects` for every resource type that can be filed in projects: the
 * live projects holding the item that the caller can read (404 when the item is unreadable).
 */
export function itemProjectsRoute(spec: { type: ProjectItemType; collection: string; idParam: string; noun: string; operationId: string; tag: string }) {
  return defineRoute({
    method: 'get',
    path: `/${spec.collection}/{${spec.idParam}}/projects`,
    operationId: spec.operationId,
    summary: `Live projects holding the ${spec.noun} that the caller can read`,
    tag: spec.tag,
    params: z.object({ [spec.idParam]: uuid }),
    query: z.object({ ...pageQuery }),
    response: { status: 200, description: 'A page of projects', schema: projectPage },
    errors: [404],
    handler: async ({ params, query, caller, deps }) => {
      const page = await listItemProjects(deps, caller, spec.type, (params as Record<string, string>)[spec.idParam]!, query);
      return { items: page.items.map(presentProject), next_cursor: page.next_cursor };
    },
  });
}
