import { organizationName } from '../organizations/index.ts';
import type { Deps } from '../platform/deps.ts';
import { invitationEmailKey } from './jobs.ts';
import { effectiveStatusSql } from './presenter.ts';

/**
 * Sends the invitation e-mail while the invitation is still pending. Idempotent: an invitation no
 * longer pending gets no mail, and the provider dedupes on the invitation's key, so a retried
 * attempt sends nothing twice. Returns the message id, or the status that stopped it.
 */
export async function sendInvitationEmail(deps: Deps, invitationId: string): Promise<{ sent: true; messageId: string } | { sent: false; status: string }> {
  const invitation = await deps
    .db('invitations as i')
    .leftJoin('users as u', 'u.id', 'i.invited_by_id')
    .where('i.id', invitationId)
    .first('i.id', 'i.email', 'i.role', 'i.organization_id', 'i.expires_at', 'u.name as inviter_name', deps.db.raw(`${effectiveStatusSql('i')} as status`));
  if (invitation?.status !== 'pending') return { sent: false, status: invitation?.status ?? 'missing' };
  const organization = await organizationName(deps.db, invitation.organization_id);
  if (organization === undefined) return { sent: false, status: 'missing' };
  const base = deps.config.PUBLIC_URL ?? `http://localhost:${deps.config.PORT}`;
  const link = `${base}/organizations/${invitation.organization_id}/invitations/${invitation.id}`;
  const inviter = invitation.inviter_name ?? 'A colleague';
  const { messageId } = await deps.providers.email.send({
    idempotencyKey: invitationEmailKey(invitation.id),
    to: invitation.email,
    subject: `${inviter} invited you to ${organization}`,
    text: [
      `${inviter} invited you to join ${organization} as ${invitation.role}.`,
      `Accept it (signed in with this e-mail address) before ${(invitation.expires_at as Date).toISOString()}:`,
      `PATCH ${link} {"status":"accepted"}`,
    ].join('\n\n'),
  });
  return { sent: true, messageId };
}
