import type { Knex } from 'knex';
import { badRequest, forbidden, notFound } from '../core/errors.ts';
import type { Actor } from '../access/index.ts';
import type { Membership } from '../members/index.ts';
import { isBuiltInRole, lockAssignableRole, requireAuthorityOver } from '../members/index.ts';
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
 * `lock` takes the row lock a state change needs (pass the transaction as `db`).
 */
export async function loadInvitation(db: Knex, actor: Actor, organizationId: string, invitationId: string, lock = false): Promise<InvitationAccess> {
  const query = db('invitations as i')
    .join('organizations as o', 'o.id', 'i.organization_id')
    .whereNull('o.deleted_at')
    .where({ 'i.id': invitationId, 'i.organization_id': organizationId })
    .first(invitationColumns(db));
  if (lock) query.forUpdate('i');
  const invitation = (await query) as InvitationRow | undefined;
  if (!invitation) throw notFound('invitation');
  const membership = await actor.membership(organizationId);
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

export async function roleExists(db: Knex, organizationId: string, role: string): Promise<boolean> {
  if (isBuiltInRole(role)) return true;
  // Custom roles live in organization_roles (roles endpoints); until that table exists only built-ins exist.
  const { rows } = await db.raw(`SELECT to_regclass('organization_roles') IS NOT NULL AS present`);
  if (!rows[0]?.present) return false;
  return Boolean(await db('organization_roles').where({ organization_id: organizationId, key: role }).first(db.raw('1')));
}
