import { defineRoute, type AnyRoute } from '../http/route.ts';
import { accountsQuery, createProjectBody, listProjectsQuery, projectAccountPage, projectIdParams, projectPage, projectSchema, updateProjectBody } from './schema.ts';
import { presentProject } from './presenter.ts';
import { archiveProject, createProject, deleteProject, getProject, listProjects, restoreProject, updateProject } from './service.ts';
import { listProjectAccounts } from './accounts.ts';
import { projectItemRoutes } from './item-routes.ts';

const tag = 'Projects';

export const projectRoutes: AnyRoute[] = [
  defineRoute({
    method: 'get',
    path: '/projects/accounts',
    operationId: 'listProjectAccounts',
    summary: 'Organizations the caller can file projects under, with project counts',
    description: 'One entry per organization the caller belongs to (oldest membership first): the caller’s role, whether it may create projects there, and how many live projects it can read (unarchived / archived).',
    tag,
    query: accountsQuery,
    response: { status: 200, description: 'A page of accounts', schema: projectAccountPage },
    handler: async ({ query, caller, deps }) => listProjectAccounts(deps, caller, query),
  }),
  defineRoute({
    method: 'post',
    path: '/projects',
    operationId: 'createProject',
    summary: 'Create a project; the caller owns it',
    tag,
    body: createProjectBody,
    response: { status: 201, description: 'The new project', schema: projectSchema },
    errors: [403, 404, 409],
    handler: async ({ body, caller, deps }) => presentProject(await createProject(deps, caller, body)),
  }),
  defineRoute({
    method: 'get',
    path: '/projects',
    operationId: 'listProjects',
    summary: 'Projects of an organization the caller can read, newest first',
    description: 'Keyset paged. A caller who is not a member of the organization gets an empty page.',
    tag,
    query: listProjectsQuery,
    response: { status: 200, description: 'A page of projects', schema: projectPage },
    handler: async ({ query, caller, deps }) => {
      const page = await listProjects(deps, caller, query);
      return { items: page.items.map(presentProject), next_cursor: page.next_cursor };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/projects/{project_id}',
    operationId: 'getProject',
    summary: 'Get a project (deleted ones too, with deleted_at set, for whoever can read them)',
    tag,
    params: projectIdParams,
    response: { status: 200, description: 'The project', schema: projectSchema },
    errors: [404],
    handler: async ({ params, caller, deps }) => presentProject(await getProject(deps, caller, params.project_id)),
  }),
  defineRoute({
    method: 'patch',
    path: '/projects/{project_id}',
    operationId: 'updateProject',
    summary: 'Change a project’s title, slug, emoji, description or metadata (editors)',
    tag,
    params: projectIdParams,
    body: updateProjectBody,
    response: { status: 200, description: 'The updated project', schema: projectSchema },
    errors: [403, 404, 409],
    handler: async ({ params, body, caller, deps }) => presentProject(await updateProject(deps, caller, params.project_id, body)),
  }),
  defineRoute({
    method: 'delete',
    path: '/projects/{project_id}',
    operationId: 'deleteProject',
    summary: 'Delete a project (owners; soft delete, restorable). Its items stay, but it no longer shares them',
    tag,
    params: projectIdParams,
    response: { status: 204, description: 'Deleted' },
    errors: [403, 404],
    handler: async ({ params, caller, deps }) => deleteProject(deps, caller, params.project_id),
  }),
  defineRoute({
    method: 'post',
    path: '/projects/{project_id}/restore',
    operationId: 'restoreProject',
    summary: 'Restore a deleted project (owners)',
    tag,
    params: projectIdParams,
    response: { status: 200, description: 'The restored project', schema: projectSchema },
    errors: [403, 404],
    handler: async ({ params, caller, deps }) => presentProject(await restoreProject(deps, caller, params.project_id)),
  }),
  defineRoute({
    method: 'post',
    path: '/projects/{project_id}/archive',
    operationId: 'archiveProject',
    summary: 'Archive a project (owners): hidden from default lists, still shares its items',
    tag,
    params: projectIdParams,
    response: { status: 200, description: 'The archived project', schema: projectSchema },
    errors: [403, 404, 409],
    handler: async ({ params, caller, deps }) => presentProject(await archiveProject(deps, caller, params.project_id, true)),
  }),
  defineRoute({
    method: 'post',
    path: '/projects/{project_id}/unarchive',
    operationId: 'unarchiveProject',
    summary: 'Unarchive a project (owners)',
    tag,
    params: projectIdParams,
    response: { status: 200, description: 'The unarchived project', schema: projectSchema },
    errors: [403, 404, 409],
    handler: async ({ params, caller, deps }) => presentProject(await archiveProject(deps, caller, params.project_id, false)),
  }),
  ...projectItemRoutes,
];
