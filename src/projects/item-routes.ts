import { resourceNoun } from '../access/index.ts';
import { defineRoute, type AnyRoute } from '../http/route.ts';
import { pageOf, pageQuery } from '../core/pagination.ts';
import { queryBoolean, timestamp, uuid, z } from '../core/zod.ts';
import { projectItemKinds } from './item-kinds.ts';
import { addProjectItem, listProjectItems, removeProjectItem, type ProjectItem } from './membership.ts';

const tag = 'Projects';

/** POST/GET /projects/{id}/<items> and DELETE /projects/{id}/<items>/{item_id}, for each kind of item. */
export const projectItemRoutes: AnyRoute[] = projectItemKinds.flatMap((kind) => {
  const { type, segment, idField } = kind;
  const noun = resourceNoun[type];
  const capital = (word: string) => word[0]!.toUpperCase() + word.slice(1);
  const Name = capital(noun);
  const Names = capital(segment);
  const itemSchema = z
    .object({
      project_id: uuid,
      [idField]: uuid,
      via: z.enum(['origin', 'reference']).openapi({ description: '`origin`: created in the project; `reference`: added afterwards.' }),
      added_by_id: z.string().nullable(),
      created_at: timestamp.openapi({ description: 'When it was filed into the project.' }),
    })
    .openapi(`Project${Name}`);
  const present = (row: ProjectItem) => ({ project_id: row.project_id, [idField]: row.item_id, via: row.via, added_by_id: row.added_by_id, created_at: row.created_at.toISOString() });
  const projectParams = z.object({ project_id: uuid });
  const itemParams = z.object({ project_id: uuid, [idField]: uuid });
  return [
    defineRoute({
      method: 'post',
      path: `/projects/{project_id}/${segment}`,
      operationId: `addProject${Name}`,
      summary: `File an existing ${noun} into a project`,
      description: `Needs the editor role on the project and the owner role on the ${noun} (filing shares it with everyone the project reaches). 409 when it is already there or either is deleted.`,
      tag,
      params: projectParams,
      body: z.object({ [idField]: uuid }).strict().openapi(`AddProject${Name}`),
      response: { status: 201, description: `The ${noun}'s membership`, schema: itemSchema },
      errors: [403, 404, 409],
      handler: async ({ params, body, actor, deps }) => present(await addProjectItem(deps, actor, params.project_id as string, type, (body as Record<string, string>)[idField]!)),
    }),
    defineRoute({
      method: 'get',
      path: `/projects/{project_id}/${segment}`,
      operationId: `listProject${Names}`,
      summary: `The ${segment} in a project that the caller can read, newest filed first`,
      description:
        `Each item is the ${noun} itself, as \`GET /${segment}/{${idField}}\` answers it${type === 'skill' ? ' (the bare skill object, without the `skill` envelope)' : ''}. ` +
        `Ordered by when it was filed into the project (newest first), then by id; only ${segment} the caller can read are listed, and a cursor stays valid while ${segment} are filed. 404 when the project is unreadable.`,
      tag,
      params: projectParams,
      query: z
        .object({
          deleted: queryBoolean.optional().openapi({ description: `\`true\`: only deleted ${segment} (still filed in the project); absent or \`false\`: only live ones.` }),
          ...pageQuery,
        })
        .strict(),
      response: { status: 200, description: `A page of ${segment}`, schema: pageOf(kind.schema).openapi(`Project${Names}Page`) },
      errors: [404],
      handler: async ({ params, query, actor, deps }) => {
        const page = await listProjectItems(deps, actor, params.project_id as string, kind, query);
        return { items: page.items.map(kind.present), next_cursor: page.next_cursor };
      },
    }),
    defineRoute({
      method: 'delete',
      path: `/projects/{project_id}/${segment}/{${idField}}`,
      operationId: `removeProject${Name}`,
      summary: `Take a ${noun} out of a project (project editors; the ${noun} itself stays)`,
      tag,
      params: itemParams,
      response: { status: 204, description: 'Removed' },
      errors: [403, 404],
      handler: async ({ params, actor, deps }) => removeProjectItem(deps, actor, params.project_id as string, type, (params as Record<string, string>)[idField]!),
    }),
  ];
});
