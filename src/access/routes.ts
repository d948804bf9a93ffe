import { defineRoute, type AnyRoute } from '../http/route.ts';
import { accessParams, accessRecordSchema, createGrantBody, generalAccessBody, grantParams, grantSchema, updateGrantBody } from './schema.ts';
import { createGrant, deleteGrant, getAccessRecord, updateGeneralAccess, updateGrant } from './service.ts';
import { allOf, anyOf, holder, resource, sent, withFields } from '../http/authorize.ts';

const tag = 'Access';
const typeInPath = { param: 'resource_type' };
const changeGeneralAccess = sent(resource(typeInPath, 'change_general_access', 'resource_id'));

export const accessRoutes: AnyRoute[] = [
  defineRoute({
    method: 'get',
    path: '/access/{resource_type}/{resource_id}',
    operationId: 'getAccess',
    summary: 'Who can reach a resource, how, and what the caller may do with it',
    tag,
    params: accessParams,
    response: { status: 200, description: 'The access record (spec 2.7)', schema: accessRecordSchema },
    errors: [404],
    authorize: resource(typeInPath, 'read', 'resource_id'),
    handler: async ({ params, actor, deps }) => getAccessRecord(deps, actor, params.resource_type, params.resource_id),
  }),
  defineRoute({
    method: 'patch',
    path: '/access/{resource_type}/{resource_id}',
    operationId: 'updateGeneralAccess',
    summary: 'Change general access (sparse; each field present is authorized on its own)',
    description:
      'Send only the fields to change. Every field present needs its own permission (today: the owner role, which organization owners/admins hold on every resource), even when resent unchanged. `public` cannot be set here (400). A deleted resource answers 409 until restored.',
    tag,
    params: accessParams,
    body: generalAccessBody,
    response: { status: 200, description: 'The access record after the change', schema: accessRecordSchema },
    errors: [403, 404, 409],
    authorize: withFields(resource(typeInPath, 'read', 'resource_id'), { visibility: changeGeneralAccess, workspace_role: changeGeneralAccess }),
    handler: async ({ params, body, actor, deps }) => updateGeneralAccess(deps, actor, params.resource_type, params.resource_id, body),
  }),
  defineRoute({
    method: 'post',
    path: '/access/{resource_type}/{resource_id}/grants',
    operationId: 'createGrant',
    idempotent: {},
    summary: 'Share a resource with a member of its organization',
    description:
      'Owners only. `user_id` must be a member of the resource’s organization and not its owner (400 naming `user_id`). A second grant for the same user is 409: change the role of the existing grant with PATCH.',
    tag,
    params: accessParams,
    body: createGrantBody,
    response: { status: 201, description: 'The new grant', schema: grantSchema },
    // Where the grant is changed and revoked.
    location: (params, answer) => `/access/${params?.resource_type}/${params?.resource_id}/grants/${(answer as { id: string }).id}`,
    errors: [403, 404, 409],
    authorize: resource(typeInPath, 'manage_people', 'resource_id'),
    handler: async ({ params, body, actor, deps }) => createGrant(deps, actor, params.resource_type, params.resource_id, body),
  }),
  defineRoute({
    method: 'patch',
    path: '/access/{resource_type}/{resource_id}/grants/{grant_id}',
    operationId: 'updateGrant',
    summary: 'Change the role of a grant',
    tag,
    params: grantParams,
    body: updateGrantBody,
    response: { status: 200, description: 'The updated grant', schema: grantSchema },
    errors: [403, 404, 409],
    authorize: resource(typeInPath, 'manage_people', 'resource_id'),
    handler: async ({ params, body, actor, deps }) => updateGrant(deps, actor, params.resource_type, params.resource_id, params.grant_id, body),
  }),
  defineRoute({
    method: 'delete',
    path: '/access/{resource_type}/{resource_id}/grants/{grant_id}',
    operationId: 'deleteGrant',
    summary: 'Remove a grant (owners), or leave a resource shared with you (your own grant)',
    tag,
    params: grantParams,
    response: { status: 204, description: 'Removed' },
    errors: [403, 404],
    // Readers may remove their own grant (leave); removing anyone else's needs manage_people (decided in the service).
    authorize: allOf(resource(typeInPath, 'read', 'resource_id'), anyOf(holder('grant', 'user_id'), resource(typeInPath, 'manage_people', 'resource_id'))),
    handler: async ({ params, actor, deps }) => deleteGrant(deps, actor, params.resource_type, params.resource_id, params.grant_id),
  }),
];
