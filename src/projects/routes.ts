import { resourceRoutes } from '../http/resource-routes.ts';
import { projectResource } from './resource.ts';
import { defineRoute, type AnyRoute } from '../http/route.ts';
import { accountsQuery, createProjectBody, listProjectsQuery, projectAccountPage, projectPage, updateProjectBody } from './schema.ts';
import { presentProject } from './presenter.ts';
import { archiveProject, createProject, deleteProject, getProject, listProjects, restoreProject, updateProject } from './service.ts';
import { listProjectAccounts } from './accounts.ts';
import { signedIn } from '../http/authorize.ts';

const tag = 'Projects';
const project = resourceRoutes(projectResource);

/** Its own operations; those of the items filed in it come from the registry (./item-routes.ts, ./item-projects-route.ts). */
export const projectRoutes: AnyRoute[] = [
  defineRoute({
    method: 'get',
    path: '/projects/accounts',
    operationId: 'listProjectAccounts',
    summary: 'Organizations the caller can file projects under, with project counts',
    description:
      'One entry per organization the caller belongs to (oldest membership first): the caller’s role, whether it may create projects there, and how many live projects it can read (unarchived / archived).',
    tag,
    query: accountsQuery,
    response: { status: 200, description: 'A page of accounts', schema: projectAccountPage },
    authorize: signedIn('the caller’s own organizations'),
    handler: async ({ query, actor, deps }) => listProjectAccounts(deps, actor, query),
  }),
  project.create({
    path: '/projects',
    operationId: 'createProject',
    summary: 'Create a project; the caller owns it',
    body: createProjectBody,
    errors: [409],
    run: createProject,
  }),
  project.list({
    path: '/projects',
    operationId: 'listProjects',
    summary: 'Projects of an organization the caller can read, newest first',
    description: 'Keyset paged. A caller who is not a member of the organization gets an empty page.',
    query: listProjectsQuery,
    page: projectPage,
    run: listProjects,
    presentItem: presentProject,
  }),
  project.get({
    path: '/projects/{project_id}',
    operationId: 'getProject',
    summary: 'Get a project (deleted ones too, with deleted_at set, for whoever can read them)',
    run: getProject,
  }),
  project.update({
    path: '/projects/{project_id}',
    operationId: 'updateProject',
    summary: 'Change a project’s title, slug, emoji, description, metadata, knowledge skill or chat tools (editors)',
    body: updateProjectBody,
    run: updateProject,
  }),
  project.remove({
    path: '/projects/{project_id}',
    operationId: 'deleteProject',
    summary: 'Delete a project (owners; soft delete, restorable). Its items stay, but it no longer shares them',
    run: deleteProject,
  }),
  project.restore({
    path: '/projects/{project_id}/restore',
    operationId: 'restoreProject',
    summary: 'Restore a deleted project (owners)',
    run: restoreProject,
  }),
  project.action({
    path: '/projects/{project_id}/archive',
    operationId: 'archiveProject',
    capability: 'archive',
    summary: 'Archive a project (owners): hidden from default lists, still shares its items',
    response: 'The archived project',
    errors: [403, 404, 409],
    run: (deps, actor, id) => archiveProject(deps, actor, id, true),
  }),
  project.action({
    path: '/projects/{project_id}/unarchive',
    operationId: 'unarchiveProject',
    capability: 'archive',
    summary: 'Unarchive a project (owners)',
    response: 'The unarchived project',
    errors: [403, 404, 409],
    run: (deps, actor, id) => archiveProject(deps, actor, id, false),
  }),
];

export { projectItemRoutes } from './item-routes.ts';
export { itemProjectsRoutes } from './item-projects-route.ts';
