import { resourceRoutes } from '../http/resource-routes.ts';
import { defineRoute, type AnyRoute } from '../http/route.ts';
import { accountsQuery, createProjectBody, listProjectsQuery, projectAccountPage, projectIdParams, projectPage, projectSchema, updateProjectBody } from './schema.ts';
import { presentProject } from './presenter.ts';
import { archiveProject, createProject, deleteProject, getProject, listProjects, restoreProject, updateProject } from './service.ts';
import { listProjectAccounts } from './accounts.ts';
import { projectItemRoutes } from './item-routes.ts';

const tag = 'Projects';
const project = resourceRoutes({ tag, path: '/projects', idParams: projectIdParams, name: 'Project', noun: 'project', schema: projectSchema, present: presentProject });

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
  project.create({ summary: 'Create a project; the caller owns it', body: createProjectBody, errors: [403, 404, 409], run: createProject }),
  project.list({
    summary: 'Projects of an organization the caller can read, newest first',
    description: 'Keyset paged. A caller who is not a member of the organization gets an empty page.',
    query: listProjectsQuery,
    page: projectPage,
    run: listProjects,
    presentItem: presentProject,
  }),
  project.get({ summary: 'Get a project (deleted ones too, with deleted_at set, for whoever can read them)', run: getProject }),
  project.update({ summary: 'Change a project’s title, slug, emoji, description or metadata (editors)', body: updateProjectBody, run: updateProject }),
  project.remove({ summary: 'Delete a project (owners; soft delete, restorable). Its items stay, but it no longer shares them', run: deleteProject }),
  project.restore({ summary: 'Restore a deleted project (owners)', run: restoreProject }),
  project.action({
    verb: 'archive',
    summary: 'Archive a project (owners): hidden from default lists, still shares its items',
    response: 'The archived project',
    errors: [403, 404, 409],
    run: (deps, caller, id) => archiveProject(deps, caller, id, true),
  }),
  project.action({
    verb: 'unarchive',
    summary: 'Unarchive a project (owners)',
    response: 'The unarchived project',
    errors: [403, 404, 409],
    run: (deps, caller, id) => archiveProject(deps, caller, id, false),
  }),
  ...projectItemRoutes,
];
