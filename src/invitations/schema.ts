import { pageOf, pageQuery } from '../core/pagination.ts';
import { CHECKED_BY_SERVER, emailAddress, organizationIdParams, timestamp, uuid, z } from '../core/zod.ts';

export const invitationStatuses = ['pending', 'accepted', 'declined', 'revoked', 'expired'] as const;
export type InvitationStatus = (typeof invitationStatuses)[number];

/** Invitations last this long; a pending one past it reads as `expired` and can no longer be accepted. */
export const INVITATION_TTL_DAYS = 7;

const roleKey = z
  .string()
  .trim()
  .min(1)
  .max(64)
  .openapi({ description: 'A built-in role (`owner`, `admin`, `member`) or a custom role of the organization.', example: 'member' });

export const invitationParams = organizationIdParams.extend({ invitation_id: uuid });

export const invitationSchema = z
  .object({
    id: z.string().uuid(),
    organization_id: z.string(),
    email: z.string().openapi({ description: 'Lower-cased; matched case-insensitively against the `email` claim of the invitee’s token.' }),
    role: z.string(),
    status: z.enum(invitationStatuses).openapi({ description: '`expired`: still pending after `expires_at` (7 days after creation).' }),
    invited_by_id: z.string(),
    expires_at: timestamp,
    accepted_at: timestamp.nullable(),
    created_at: timestamp,
    updated_at: timestamp,
  })
  .openapi('Invitation');

export const invitationEnvelope = z.object({ invitation: invitationSchema });
export const invitationPage = pageOf(invitationSchema).openapi('InvitationPage');

export const createInvitationBody = z
  .object({
    email: emailAddress().toLowerCase(),
    role: roleKey.openapi({ [CHECKED_BY_SERVER]: true }),
  })
  .strict()
  .openapi('CreateInvitation');

export const updateInvitationBody = z
  .object({
    role: roleKey
      .optional()
      .openapi({ description: 'New role (needs the invitations.manage permission).' })
      .openapi({ [CHECKED_BY_SERVER]: true }),
    status: z.literal('accepted').optional().openapi({ description: 'Only the invitee sends this: they become a member with the invited role.' }),
  })
  .strict()
  .refine((body) => (body.role === undefined) !== (body.status === undefined), 'send exactly one of role, status')
  .openapi({ oneOf: [{ required: ['role'] }, { required: ['status'] }] })
  .openapi('UpdateInvitation');

export const listInvitationsQuery = z.object({
  status: z.enum(invitationStatuses).optional().openapi({ description: 'Only invitations with this status.' }),
  ...pageQuery,
});
