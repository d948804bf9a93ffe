import { defineJob, type PayloadOf } from '../jobs/define.ts';
import { z } from '../core/zod.ts';

/** Sends the invitation e-mail once the invitation is committed (enqueued in the same transaction). */
export const invitationEmailJob = defineJob({
  name: 'invitations.email',
  version: 1,
  nature: 'waits',
  payload: z.object({ invitation_id: z.string().uuid() }),
  searchable: ['invitation_id'],
  policy: { retryLimit: 8, retryDelaySeconds: 10, expireInSeconds: 5 * 60 },
});
export type InvitationEmailPayload = PayloadOf<typeof invitationEmailJob>;

/** The same key for every attempt of one invitation's e-mail: a retried job never sends it twice. */
export const invitationEmailKey = (invitationId: string) => `invitation:${invitationId}`;
