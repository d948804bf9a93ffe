import { resourceRoutes } from '../http/resource-routes.ts';
import { defineRoute, type AnyRoute } from '../http/route.ts';
import {
  accountsQuery,
  createProjectBody,
  listProjectsQuery,
  projectAccountPage,
  projectIdParams,
  projectPage,
  projectSchema,
  updateProjectBody,
} from './schema.ts';
import { presentProject } from './presenter.ts';
import { archiveProject, createProject, deleteProject, getProject, listProjects, restoreProject, updateProject } from './service.ts';
import { listProjectAccounts } from './accounts.ts';
import { projectItemRoutes } from './item-routes.ts';
import { itemProjectsRoute } from './item-projects-route.ts';
import { assetIdParams } from '../assets/index.ts';
import { canvasIdParams } from '../canvases/index.ts';
import { conversationIdParams } from '../conversations/index.ts';
import { skillIdParams } from '../skills/index.ts';
import { signedIn } from '../http/authorize.ts';

const tag = 'Projects';
const project = resourceRoutes({
  type: 'project',
  tag,
  path: '/projects',
  idParams: projectIdParams,
  noun: 'project',
  schema: projectSchema,
  present: presentProject,
});

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
    summary: 'Change a project’s title, slug, emoji, description or metadata (editors)',
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
  ...projectItemRoutes('asset', {
    add: { path: '/projects/{project_id}/assets', operationId: 'addProjectAsset' },
    list: { path: '/projects/{project_id}/assets', operationId: 'listProjectAssets' },
    remove: { path: '/projects/{project_id}/assets/{asset_id}', operationId: 'removeProjectAsset' },
  }),
  ...projectItemRoutes('canvas', {
    add: { path: '/projects/{project_id}/canvases', operationId: 'addProjectCanvas' },
    list: { path: '/projects/{project_id}/canvases', operationId: 'listProjectCanvases' },
    remove: { path: '/projects/{project_id}/canvases/{canvas_id}', operationId: 'removeProjectCanvas' },
  }),
  ...projectItemRoutes('chat_conversation', {
    add: { path: '/projects/{project_id}/conversations', operationId: 'addProjectConversation' },
    list: { path: '/projects/{project_id}/conversations', operationId: 'listProjectConversations' },
    remove: { path: '/projects/{project_id}/conversations/{conversation_id}', operationId: 'removeProjectConversation' },
  }),
  ...projectItemRoutes('skill', {
    add: { path: '/projects/{project_id}/skills', operationId: 'addProjectSkill' },
    list: { path: '/projects/{project_id}/skills', operationId: 'listProjectSkills' },
    remove: { path: '/projects/{project_id}/skills/{skill_id}', operationId: 'removeProjectSkill' },
  }),
];

/**
 * `GET /<items>/{id}/projects` for each kind of item that can be filed in projects. Declared here,
 * with the query that answers them, so the item domains never import projects (projects know
 * their items, not the other way round); each keeps its own tag in the document.
 */
export const itemProjectsRoutes: AnyRoute[] = [
  itemProjectsRoute({
    type: 'asset',
    path: '/assets/{asset_id}/projects',
    idParams: assetIdParams,
    noun: 'asset',
    operationId: 'listAssetProjects',
    tag: 'Assets',
  }),
  itemProjectsRoute({
    type: 'canvas',
    path: '/canvases/{canvas_id}/projects',
    idParams: canvasIdParams,
    noun: 'canvas',
    operationId: 'listCanvasProjects',
    tag: 'Canvases',
  }),
  itemProjectsRoute({
    type: 'chat_conversation',
    path: '/conversations/{conversation_id}/projects',
    idParams: conversationIdParams,
    noun: 'conversation',
    operationId: 'listConversationProjects',
    tag: 'Conversations',
  }),
  itemProjectsRoute({
    type: 'skill',
    path: '/skills/{skill_id}/projects',
    idParams: skillIdParams,
    noun: 'skill',
    operationId: 'listSkillProjects',
    tag: 'Skills',
  }),
];
