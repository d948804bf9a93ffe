import { presentPage } from '../core/pagination.ts';
import { notFound } from '../core/errors.ts';
import { resourceRoutes } from '../http/resource-routes.ts';
import { skillResource } from './resource.ts';
import type { AnyRoute } from '../http/route.ts';
import { organizationRoute } from '../http/organization-route.ts';
import { listSkills } from './list.ts';
import { presentOrganizationSkill, presentSkill, presentSkillVersion, type SkillRow } from './presenter.ts';
import {
  createOrganizationSkillBody,
  createSkillBody,
  listSkillsQuery,
  organizationSkillEnvelope,
  skillEnvelope,
  skillIdParams,
  skillPage,
  skillVersionEnvelope,
  skillVersionPage,
  skillVersionParams,
  skillVersionsQuery,
  updateSkillBody,
} from './schema.ts';
import { createSkill, deleteSkill, getSkill, restoreSkill, restoreSkillVersion, updateSkill } from './service.ts';
import { findVersion, listVersions } from './versions.ts';

const tag = 'Skills';
// Spec 2.5: a skill is answered wrapped as `{skill}` (./resource.ts).
const skill = resourceRoutes(skillResource);

export const skillRoutes: AnyRoute[] = [
  skill.create({
    path: '/skills',
    operationId: 'createSkill',
    summary: 'Create a custom skill (version 1)',
    description:
      'Needs the organization permission `resources.create`; the caller owns the skill. With `project_id` the skill is filed in that project and `project_scoped` is true. A live skill’s name is unique in its organization (case-insensitive): 409.',
    body: createSkillBody,
    errors: [409],
    run: createSkill,
  }),
  skill.list({
    path: '/skills',
    operationId: 'listSkills',
    summary: 'List the custom skills of an organization that the caller can read',
    description: 'Newest first, keyset paged. A caller who is not a member gets an empty page.',
    query: listSkillsQuery,
    page: skillPage,
    run: (deps, actor, query) => listSkills(deps.db, actor, query),
    presentItem: presentSkill,
  }),
  skill.get({ path: '/skills/{skill_id}', operationId: 'getSkill', summary: 'Get a skill (also a deleted one, showing `deleted_at`)', run: getSkill }),
  skill.update({
    path: '/skills/{skill_id}',
    operationId: 'updateSkill',
    summary: 'Change a skill; every change makes a new version',
    description: 'Needs the editor role. 409 when the skill is deleted or the new name is taken in the organization.',
    body: updateSkillBody,
    run: updateSkill,
  }),
  skill.remove({
    path: '/skills/{skill_id}',
    operationId: 'deleteSkill',
    summary: 'Delete a skill (soft delete; restorable)',
    description: 'Needs the owner role (creator, or organization owner/admin). Deleting a deleted skill is a no-op 204.',
    run: deleteSkill,
  }),
  skill.restore({
    path: '/skills/{skill_id}/restore',
    operationId: 'restoreSkill',
    summary: 'Restore a deleted skill',
    description: 'Needs the owner role. 409 when a live skill took its name meanwhile. Restoring a live skill returns it unchanged.',
    errors: [403, 404, 409],
    run: restoreSkill,
  }),
  skill.on('read', {
    method: 'get',
    path: '/skills/{skill_id}/versions',
    operationId: 'listSkillVersions',
    summary: 'List a skill’s versions, newest first',
    params: skillIdParams,
    query: skillVersionsQuery,
    response: { status: 200, description: 'A page of versions', schema: skillVersionPage },
    handler: async ({ params, query, actor, deps }) => {
      const { row } = await actor.resource<SkillRow>(deps.db, 'skill', params.skill_id, 'read');
      return presentPage(await listVersions(deps.db, row.id, query), (v) => presentSkillVersion(v, row.current_version));
    },
  }),
  skill.on('read', {
    method: 'get',
    path: '/skills/{skill_id}/versions/{version_id}',
    operationId: 'getSkillVersion',
    summary: 'Get one version of a skill',
    params: skillVersionParams,
    response: { status: 200, description: 'The version', schema: skillVersionEnvelope },
    handler: async ({ params, actor, deps }) => {
      const { row } = await actor.resource<SkillRow>(deps.db, 'skill', params.skill_id, 'read');
      const version = await findVersion(deps.db, row.id, params.version_id);
      if (!version) throw notFound('skill version');
      return { version: presentSkillVersion(version, row.current_version) };
    },
  }),
  skill.on('edit', {
    method: 'post',
    path: '/skills/{skill_id}/versions/{version_id}/restore',
    operationId: 'restoreSkillVersion',
    summary: 'Make an earlier version current again (as a new version copying it)',
    description:
      'Needs the editor role. History is kept: the copy gets the next version number and `restored_from_version`. 409 when the skill is deleted or the version’s name is now taken.',
    params: skillVersionParams,
    response: { status: 200, description: 'The skill as the new version shows it', schema: skillEnvelope },
    errors: [409],
    handler: async ({ params, actor, deps }) => ({ skill: presentSkill((await restoreSkillVersion(deps, actor, params.skill_id, params.version_id)).skill) }),
  }),
  organizationRoute({
    method: 'post',
    path: '/organizations/{organization_id}/skills',
    operationId: 'createOrganizationSkill',
    idempotent: {},
    summary: 'Create a custom skill in an organization (organization-scoped shape)',
    description: [
      'Body: `name` (1–120 characters), `description` (≤ 2000) and `body` (≤ 200000) are required strings; `files` (any JSON, ≤ 1 MB) is optional; nothing else is accepted.',
      'Success is 201 with `{skill}` in the organization-scoped shape (spec 2.5); the skill starts at version 1, private to its creator.',
      'Errors: 400 invalid body (the message names the field); 403 the caller’s organization role lacks `resources.create`;',
      '404 no such organization or the caller is not a member; 409 a live skill with that name (case-insensitive) exists in the organization.',
    ].join(' '),
    tag,
    body: createOrganizationSkillBody,
    response: { status: 201, description: 'The new skill (organization-scoped shape)', schema: organizationSkillEnvelope },
    location: (_params, answer) => `/skills/${(answer as { skill: { id: string } }).skill.id}`,
    errors: [409],
    permission: 'resources.create',
    handler: async ({ params, body, actor, deps }) => ({
      skill: presentOrganizationSkill(await createSkill(deps, actor, { organization_id: params.organization_id, ...body })),
    }),
  }),
];
