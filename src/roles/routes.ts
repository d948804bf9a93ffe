import { allOf, authorityOver, holdsPermissions, member, sent, withFields } from '../http/authorize.ts';
import { defineRoute, type AnyRoute } from '../http/route.ts';
import { organizationIdParams } from '../core/zod.ts';
import { presentRole } from './presenter.ts';
import { deleteRoleQuery, listRolesQuery, roleEnvelope, rolePage, saveRoleBody } from './schema.ts';
import { deleteRole, listRoles, saveRole } from './service.ts';

const tag = 'Roles';

export const roleRoutes: AnyRoute[] = [
  defineRoute({
    method: 'get',
    path: '/organizations/{organization_id}/roles',
    operationId: 'listOrganizationRoles',
    summary: 'List the roles of an organization with their permissions and member counts',
    description: 'Built-in roles (`owner`, `admin`, `member`) come first, then custom roles by key. Any member may read them.',
    tag,
    params: organizationIdParams,
    query: listRolesQuery,
    response: { status: 200, description: 'A page of roles', schema: rolePage },
    errors: [404],
    authorize: member(),
    handler: async ({ params, query, deps }) => {
      const page = await listRoles(deps, params.organization_id, query);
      return { items: page.items.map(({ role, memberCount }) => presentRole(role, memberCount)), next_cursor: page.next_cursor };
    },
  }),
  defineRoute({
    method: 'patch',
    path: '/organizations/{organization_id}/roles',
    operationId: 'saveOrganizationRole',
    summary: 'Create a custom role, or replace the definition of one',
    description:
      'Needs `roles.manage`. The role `key` names it; built-in keys cannot be changed (409). A caller may only put permissions it holds itself into a role, ' +
      'and only change a role whose permissions it holds (403). At most 50 custom roles per organization (409).',
    tag,
    params: organizationIdParams,
    body: saveRoleBody,
    response: { status: 200, description: 'The created or updated role', schema: roleEnvelope },
    errors: [403, 404, 409],
    // Authority over the role `key` names, when it exists already.
    authorize: withFields(allOf(member('roles.manage'), authorityOver({ record: 'role' })), { permissions: sent(holdsPermissions('permissions')) }),
    handler: async ({ params, body, actor, deps }) => {
      const { role, memberCount } = await saveRole(deps, actor, params.organization_id, body);
      return { role: presentRole(role, memberCount) };
    },
  }),
  defineRoute({
    method: 'delete',
    path: '/organizations/{organization_id}/roles',
    operationId: 'deleteOrganizationRole',
    summary: 'Delete a custom role that no member holds',
    description:
      'Needs `roles.manage` and, as for changing it, every permission the role carries (403 otherwise). Built-in roles cannot be deleted (409); nor can a role members still hold (409). An unknown key is 404.',
    tag,
    params: organizationIdParams,
    query: deleteRoleQuery,
    response: { status: 204, description: 'Deleted' },
    errors: [403, 404, 409],
    authorize: allOf(member('roles.manage'), authorityOver({ record: 'role' })),
    handler: async ({ params, query, actor, deps }) => deleteRole(deps, actor, params.organization_id, query.key),
  }),
];
