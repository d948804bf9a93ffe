import type { Knex } from 'knex';
import { badRequest, forbidden, notFound } from '../core/errors.ts';
import type { Actor } from '../access/index.ts';
import type { Membership } from '../members/index.ts';
import { lockAssignableRole, requireAuthorityOver } from '../members/index.ts';
import { isLiveOrganization } from '../organizations/index.ts';
import { invitationColumns, type InvitationRow } from './presenter.ts';

/** Who is asking about one invitation: a member (with their permissions), the invitee, or both. */
export interface InvitationAccess {
  invitation: InvitationRow;
  membership: Membership | null;
  isInvitee: boolean;
}

export const isInviteeOf = (actor: Actor, email: string) => Boolean(actor.email) && actor.email!.trim().toLowerCase() === email;

/**
 * Loads an invitation of a live organization for a member or its invitee, else 404 — the same
 * answer whether the organization, the invitation or the caller's right to see it is missing.
 * With `lock` (a state change; pass its transaction as `trx`) the invitation row is locked and the
 * caller's membership is read as it is now, locked like a role change reads it (so a manager
 * demoted meanwhile is refused).
 */
export async function loadInvitation(db: Knex, actor: Actor, organizationId: string, invitationId: string): Promise<InvitationAccess>;
export async function loadInvitation(trx: Knex.Transaction, actor: Actor, organizationId: string, invitationId: string, lock: true): Promise<InvitationAccess>;
export async function loadInvitation(db: Knex, actor: Actor, organizationId: string, invitationId: string, lock = false): Promise<InvitationAccess> {
  if (!(await isLiveOrganization(db, organizationId))) throw notFound('invitation');
  const query = db('invitations as i').where({ 'i.id': invitationId, 'i.organization_id': organizationId }).first(invitationColumns(db));
  if (lock) query.forUpdate('i');
  const invitation = (await query) as InvitationRow | undefined;
  if (!invitation) throw notFound('invitation');
  const membership = await actor.membership(organizationId, lock ? { fresh: db as Knex.Transaction } : {});
  const isInvitee = isInviteeOf(actor, invitation.email);
  if (!membership && !isInvitee) throw notFound('invitation');
  return { invitation, membership, isInvitee };
}

/** Members who manage invitations; the invitee is told they lack that permission (they can read it). */
export function requireManager(access: InvitationAccess): Membership {
  const { membership } = access;
  if (!membership) throw forbidden('only members with the invitations.manage permission may do this');
  if (!membership.permissions.has('invitations.manage')) throw forbidden(`your role "${membership.role}" lacks the permission invitations.manage`);
  return membership;
}

export function requireInvitee(access: InvitationAccess, action: 'accept' | 'decline'): void {
  if (!access.isInvitee) throw forbidden(`only the invitee (whose token e-mail matches the invitation) may ${action} it`);
}

/**
 * The role must exist in the organization (built-in or custom), owner invitations — giving or
 * changing — are for owners only, and nobody invites with more power than they hold: the check
 * changing a member's role makes (a custom role is share-locked until the transaction ends, so it
 * cannot be widened or deleted in between).
 */
export async function requireAssignableRole(trx: Knex.Transaction, inviter: Membership, role: string, doing = 'invite with', field = 'role'): Promise<void> {
  const assignable = await lockAssignableRole(trx, inviter.organizationId, role);
  if (!assignable) throw badRequest(`${field}: no role "${role}" in this organization`, [field]);
  if (role === 'owner' && inviter.role !== 'owner') throw forbidden('only owners may invite owners');
  requireAuthorityOver(inviter, assignable, doing);
}
