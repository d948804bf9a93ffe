import { idParamOf, type ResourceTypeDeclaration } from '../access/index.ts';
import { resource } from '../http/authorize.ts';
import { defineRoute, type AnyRoute } from '../http/route.ts';
import { pageOf, pageQuery, presentPage } from '../core/pagination.ts';
import { queryBoolean, timestamp, uuid, z } from '../core/zod.ts';
import { addProjectItem, listProjectItems, removeProjectItem, type ProjectItem } from './membership.ts';

const tag = 'Projects';

/** The types filed in projects (a `project` section in their declaration), in order of their collection path. */
export const projectItemTypes = (types: readonly ResourceTypeDeclaration[]) =>
  types.filter((t) => t.project).sort((a, b) => (a.api.path < b.api.path ? -1 : a.api.path > b.api.path ? 1 : 0));

/** How a project item type is named in paths and operation ids: `/projects/{project_id}/canvases`, `addProjectCanvas`. */
export function itemNames(declaration: ResourceTypeDeclaration) {
  const capital = (word: string) => word[0]!.toUpperCase() + word.slice(1);
  const segment = declaration.api.path.slice(1);
  return { segment, idField: idParamOf(declaration), Name: capital(declaration.noun), Names: capital(segment) };
}

/**
 * POST/GET `/projects/{project_id}/<items>` and DELETE `/projects/{project_id}/<items>/{item_id}`
 * for every type filed in projects, named from its declaration (`addProjectCanvas`,
 * `listProjectCanvases`, `removeProjectCanvas`).
 */
export const projectItemRoutes = (types: readonly ResourceTypeDeclaration[]): AnyRoute[] => projectItemTypes(types).flatMap(itemRoutes);

function itemRoutes(declaration: ResourceTypeDeclaration): AnyRoute[] {
  const { type, noun } = declaration;
  const listed = declaration.project!;
  const { segment, idField, Name, Names } = itemNames(declaration);
  const add = { path: `/projects/{project_id}/${segment}`, operationId: `addProject${Name}` };
  const list = { path: `/projects/{project_id}/${segment}`, operationId: `listProject${Names}` };
  const remove = { path: `/projects/{project_id}/${segment}/{${idField}}`, operationId: `removeProject${Name}` };
  const idOf = (values: Record<string, string>) => values[idField]!;
  const itemSchema = z
    .object({
      project_id: uuid,
      [idField]: uuid,
      via: z.enum(['origin', 'reference']).openapi({ description: '`origin`: created in the project; `reference`: added afterwards.' }),
      added_by_id: z.string().nullable(),
      created_at: timestamp.openapi({ description: 'When it was filed into the project.' }),
    })
    .openapi(`Project${Name}`);
  const present = (row: ProjectItem) => ({
    project_id: row.project_id,
    [idField]: row.item_id,
    via: row.via,
    added_by_id: row.added_by_id,
    created_at: row.created_at.toISOString(),
  });
  const projectParams = z.object({ project_id: uuid });
  const itemParams = z.object({ project_id: uuid, [idField]: uuid });
  return [
    defineRoute({
      method: 'post',
      ...add,
      idempotent: {},
      summary: `File an existing ${noun} into a project`,
      description: `Needs the editor role on the project and the owner role on the ${noun} (filing shares it with everyone the project reaches). 409 when it is already there or either is deleted.`,
      tag,
      params: projectParams,
      body: z
        .object({ [idField]: uuid })
        .strict()
        .openapi(`AddProject${Name}`),
      response: { status: 201, description: `The ${noun}'s membership`, schema: itemSchema },
      // The membership is addressed where it is removed.
      location: (params, answer) => `/projects/${params?.project_id}/${segment}/${(answer as Record<string, string>)[idField]}`,
      errors: [403, 404, 409],
      authorize: resource('project', 'edit', 'project_id'),
      handler: async ({ params, body, actor, deps }) => present(await addProjectItem(deps, actor, params.project_id, type, idOf(body))),
    }),
    defineRoute({
      method: 'get',
      ...list,
      summary: `The ${segment} in a project that the caller can read, newest filed first`,
      description:
        `Each item is the ${noun} itself, as \`GET /${segment}/{${idField}}\` answers it${listed.note ? ` (${listed.note})` : ''}. ` +
        `Ordered by when it was filed into the project (newest first), then by id; only ${segment} the caller can read are listed, and a cursor stays valid while ${segment} are filed. 404 when the project is unreadable.`,
      tag,
      params: projectParams,
      query: z
        .object({
          deleted: queryBoolean
            .optional()
            .openapi({ description: `\`true\`: only deleted ${segment} (still filed in the project); absent or \`false\`: only live ones.` }),
          ...pageQuery,
        })
        .strict(),
      response: { status: 200, description: `A page of ${segment}`, schema: pageOf(listed.schema).openapi(`Project${Names}Page`) },
      errors: [404],
      authorize: resource('project', 'read', 'project_id'),
      handler: async ({ params, query, actor, deps }) =>
        presentPage(await listProjectItems(deps, actor, params.project_id, declaration, query), listed.present),
    }),
    defineRoute({
      method: 'delete',
      ...remove,
      summary: `Take a ${noun} out of a project (project editors; the ${noun} itself stays)`,
      tag,
      params: itemParams,
      response: { status: 204, description: 'Removed' },
      errors: [403, 404],
      authorize: resource('project', 'edit', 'project_id'),
      handler: async ({ params, actor, deps }) => removeProjectItem(deps, actor, params.project_id!, type, idOf(params)),
    }),
  ];
}
