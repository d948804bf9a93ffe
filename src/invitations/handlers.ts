// Worker side of the invitation jobs (loaded by `invitationEmailJob.handler`).
import type { JobContext } from '../jobs/define.ts';
import { sendInvitationEmail } from './email.ts';
import type { InvitationEmailPayload } from './jobs.ts';

export async function emailInvitation({ invitation_id }: InvitationEmailPayload, { deps, log }: JobContext): Promise<void> {
  const result = await sendInvitationEmail(deps, invitation_id);
  if (result.sent) log.info({ invitation_id, message_id: result.messageId }, 'invitation e-mail sent');
  else log.info({ invitation_id, status: result.status }, 'invitation no longer pending: no e-mail');
}
