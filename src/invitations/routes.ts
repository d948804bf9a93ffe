import { presentPage } from '../core/pagination.ts';
import { allOf, anyOf, authorityOver, holder, member, recordMember, sent, setTo, withFields } from '../http/authorize.ts';
import type { AnyRoute } from '../http/route.ts';
import { organizationRoute } from '../http/organization-route.ts';
import { presentInvitation } from './presenter.ts';
import { createInvitationBody, invitationEnvelope, invitationPage, invitationParams, listInvitationsQuery, updateInvitationBody } from './schema.ts';
import { acceptInvitation, changeInvitationRole, createInvitation, declineInvitation, getInvitation, listInvitations, revokeInvitation } from './service.ts';

const tag = 'Invitations';
// The invitee (the token's `email` claim) need not be a member: decided by the service on the invitation.
const invitee = holder('invitation', 'email');
const inviteeOrManager = anyOf(invitee, recordMember('invitation', 'invitations.manage'));
const inviteeNote =
  'The invitee — the caller whose token `email` claim matches the invitation, case-insensitively — may use it without being a member; anyone else outside the organization gets 404.';

export const invitationRoutes: AnyRoute[] = [
  organizationRoute({
    method: 'post',
    path: '/organizations/{organization_id}/invitations',
    operationId: 'createInvitation',
    idempotent: {},
    summary: 'Invite someone by e-mail to join the organization with a role',
    description:
      'Needs the invitations.manage permission; only owners may invite owners, and a role carrying any permission the caller’s own role lacks (custom roles included) is 403, as when changing a member’s role. The invitation expires after 7 days. An e-mail is sent to the address by a worker. 409 when the address already has a pending invitation or belongs to a member.',
    tag,
    body: createInvitationBody,
    response: { status: 201, description: 'The new pending invitation', schema: invitationEnvelope },
    errors: [403, 409],
    authorize: withFields(member('invitations.manage'), { role: sent(authorityOver({ body: 'role' })) }),
    handler: async ({ params, body, actor, deps }) => ({ invitation: presentInvitation(await createInvitation(deps, actor, params.organization_id, body)) }),
  }),
  organizationRoute({
    method: 'get',
    path: '/organizations/{organization_id}/invitations',
    operationId: 'listInvitations',
    summary: 'List the organization’s invitations, newest first',
    description: 'Needs the invitations.manage permission. `status=expired` lists pending invitations past their expiry.',
    tag,
    query: listInvitationsQuery,
    response: { status: 200, description: 'A page of invitations', schema: invitationPage },
    permission: 'invitations.manage',
    handler: async ({ params, query, deps }) => presentPage(await listInvitations(deps, params.organization_id, query), presentInvitation),
  }),
  organizationRoute({
    method: 'get',
    path: '/organizations/{organization_id}/invitations/{invitation_id}',
    operationId: 'getInvitation',
    summary: 'Get one invitation (managers of invitations, or the invitee)',
    description: inviteeNote,
    tag,
    params: invitationParams,
    response: { status: 200, description: 'The invitation', schema: invitationEnvelope },
    errors: [403],
    authorize: inviteeOrManager,
    handler: async ({ params, actor, deps }) => ({
      invitation: presentInvitation(await getInvitation(deps, actor, params.organization_id, params.invitation_id)),
    }),
  }),
  organizationRoute({
    method: 'patch',
    path: '/organizations/{organization_id}/invitations/{invitation_id}',
    operationId: 'updateInvitation',
    summary: 'Change a pending invitation’s role, or accept it',
    description: `Send exactly one field. \`role\`: needs invitations.manage (owner invitations: owners only) and, as when changing a member’s role, every permission of both the invitation’s role and the new one (403 otherwise). \`{"status":"accepted"}\`: the invitee only; they become a member with the invited role. 409 when the invitation is no longer pending (accepted, declined, revoked or expired) or the invitee is already a member. ${inviteeNote}`,
    tag,
    params: invitationParams,
    body: updateInvitationBody,
    response: { status: 200, description: 'The updated invitation', schema: invitationEnvelope },
    errors: [403, 409],
    authorize: withFields(inviteeOrManager, {
      role: sent(allOf(recordMember('invitation', 'invitations.manage'), authorityOver({ record: 'invitation' }), authorityOver({ body: 'role' }))),
      status: setTo('accepted', invitee),
    }),
    handler: async ({ params, body, actor, deps }) => {
      const { organization_id: organizationId, invitation_id: invitationId } = params;
      const invitation =
        body.status === 'accepted'
          ? await acceptInvitation(deps, actor, organizationId, invitationId)
          : await changeInvitationRole(deps, actor, organizationId, invitationId, body.role!);
      return { invitation: presentInvitation(invitation) };
    },
  }),
  organizationRoute({
    method: 'post',
    path: '/organizations/{organization_id}/invitations/{invitation_id}/decline',
    operationId: 'declineInvitation',
    summary: 'Decline an invitation (the invitee only)',
    description: `409 when the invitation is no longer pending. ${inviteeNote}`,
    tag,
    params: invitationParams,
    response: { status: 200, description: 'The declined invitation', schema: invitationEnvelope },
    errors: [403, 409],
    authorize: invitee,
    handler: async ({ params, actor, deps }) => ({
      invitation: presentInvitation(await declineInvitation(deps, actor, params.organization_id, params.invitation_id)),
    }),
  }),
  organizationRoute({
    method: 'delete',
    path: '/organizations/{organization_id}/invitations/{invitation_id}',
    operationId: 'revokeInvitation',
    summary: 'Revoke a pending invitation',
    description:
      'Needs invitations.manage (owner invitations: owners only). The invitation stays listed with status `revoked`. 409 when it is no longer pending.',
    tag,
    params: invitationParams,
    response: { status: 204, description: 'Revoked' },
    errors: [403, 409],
    authorize: recordMember('invitation', 'invitations.manage'),
    handler: async ({ params, actor, deps }) => revokeInvitation(deps, actor, params.organization_id, params.invitation_id),
  }),
];
