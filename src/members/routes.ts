import { presentPage } from '../core/pagination.ts';
import type { AnyRoute } from '../http/route.ts';
import { organizationRoute } from '../http/organization-route.ts';
import { changeMemberRole, leaveOrganization, removeMember } from './changes.ts';
import { getMember, listMembers } from './directory.ts';
import { getPersonalization, updatePersonalization } from './personalization.ts';
import { presentMember, presentPersonalization } from './presenter.ts';
import {
  changeMemberRoleBody,
  listMembersQuery,
  memberEnvelope,
  memberPage,
  memberParams,
  personalizationEnvelope,
  updatePersonalizationBody,
} from './schema.ts';
import { allOf, authorityOver, member, self, sent, withFields } from '../http/authorize.ts';

const tag = 'Members';
const overTheMember = authorityOver({ record: 'member' });

export const memberRoutes: AnyRoute[] = [
  organizationRoute({
    method: 'get',
    path: '/organizations/{organization_id}/members',
    operationId: 'listOrganizationMembers',
    summary: 'List the members of an organization, in the order they joined',
    description: 'Needs `members.view`. Filter by `role` and by `search` (case-insensitive part of the name or e-mail).',
    tag,
    query: listMembersQuery,
    response: { status: 200, description: 'A page of members', schema: memberPage },
    permission: 'members.view',
    handler: async ({ params, query, deps }) => presentPage(await listMembers(deps, params.organization_id, query), presentMember),
  }),
  organizationRoute({
    method: 'post',
    path: '/organizations/{organization_id}/leave',
    operationId: 'leaveOrganization',
    summary: 'Leave the organization',
    description:
      'The caller stops being a member; their resource grants in the organization are deleted with it. The last owner cannot leave (409): make another member an owner first.',
    tag,
    response: { status: 204, description: 'Left' },
    errors: [409],
    handler: async ({ params, actor, deps }) => leaveOrganization(deps, actor, params.organization_id),
  }),
  organizationRoute({
    method: 'get',
    path: '/organizations/{organization_id}/members/{user_id}',
    operationId: 'getOrganizationMember',
    summary: 'Get one member',
    description: 'A member may always read themself; reading others needs `members.view`.',
    tag,
    params: memberParams,
    response: { status: 200, description: 'The member', schema: memberEnvelope },
    errors: [403],
    authorize: member('members.view', { self: 'user_id' }),
    handler: async ({ params, deps }) => ({ member: presentMember(await getMember(deps, params.organization_id, params.user_id)) }),
  }),
  organizationRoute({
    method: 'patch',
    path: '/organizations/{organization_id}/members/{user_id}',
    operationId: 'changeOrganizationMemberRole',
    summary: "Change a member's role",
    description:
      'Needs `members.manage`. The role must exist in the organization (built-in or custom; 400 otherwise). Only owners may grant or take away `owner`, ' +
      'and a caller may only grant or take away roles whose permissions it holds itself (403). The last owner cannot be demoted (409).',
    tag,
    params: memberParams,
    body: changeMemberRoleBody,
    response: { status: 200, description: 'The member with the new role', schema: memberEnvelope },
    errors: [403, 409],
    authorize: withFields(allOf(member('members.manage'), overTheMember), { role: sent(authorityOver({ body: 'role' })) }),
    handler: async ({ params, body, actor, deps }) => ({
      member: presentMember(await changeMemberRole(deps, actor, params.organization_id, params.user_id, body.role)),
    }),
  }),
  organizationRoute({
    method: 'delete',
    path: '/organizations/{organization_id}/members/{user_id}',
    operationId: 'removeOrganizationMember',
    summary: 'Remove a member from the organization',
    description:
      'Needs `members.manage`, and authority over the member’s role: only owners remove owners, admins cannot (403). The last owner cannot be removed (409). ' +
      'The member’s personalization and every resource grant they held in the organization go with the membership (re-inviting them later restores no old access).',
    tag,
    params: memberParams,
    response: { status: 204, description: 'Removed' },
    errors: [403, 409],
    authorize: allOf(member('members.manage'), overTheMember),
    handler: async ({ params, actor, deps }) => removeMember(deps, actor, params.organization_id, params.user_id),
  }),
  organizationRoute({
    method: 'get',
    path: '/organizations/{organization_id}/members/{user_id}/personalization',
    operationId: 'getMemberPersonalization',
    summary: "Get the caller's own settings in the organization",
    description: 'Only the member themself may read it (another member gets 403). Never-saved settings read as nulls and `{}`.',
    tag,
    params: memberParams,
    response: { status: 200, description: 'The personalization', schema: personalizationEnvelope },
    errors: [403],
    authorize: allOf(member(), self('user_id')),
    handler: async ({ params, actor, deps }) => ({
      personalization: presentPersonalization(await getPersonalization(deps, actor, params.organization_id, params.user_id)),
    }),
  }),
  organizationRoute({
    method: 'patch',
    path: '/organizations/{organization_id}/members/{user_id}/personalization',
    operationId: 'updateMemberPersonalization',
    summary: "Change the caller's own settings in the organization",
    description:
      'Only the member themself may change it (403 otherwise). Fields sent replace the stored ones (`preferences` as a whole); null clears a text field.',
    tag,
    params: memberParams,
    body: updatePersonalizationBody,
    response: { status: 200, description: 'The updated personalization', schema: personalizationEnvelope },
    errors: [403],
    authorize: allOf(member(), self('user_id')),
    handler: async ({ params, body, actor, deps }) => ({
      personalization: presentPersonalization(await updatePersonalization(deps, actor, params.organization_id, params.user_id, body)),
    }),
  }),
];
