import type { Knex } from 'knex';
import { recordActivity } from '../core/activity.ts';
import { badRequest, notFound } from '../core/errors.ts';
import type { Caller } from '../core/caller.ts';
import { requireCurrentMembership, rolePermissions } from './membership.ts';
import type { Deps } from '../platform/deps.ts';
import { requireAuthorityOver } from './authority.ts';
import { lockAssignableRole } from './role-catalog.ts';
import { findMember } from './directory.ts';
import { recordMemberEvent } from './events.ts';
import { lockOwners, requireAnotherOwner } from './owners.ts';
import type { MemberRow } from './presenter.ts';
import { inTransaction } from '../db/transaction.ts';

/** The target membership, locked for the rest of the transaction, or 404. */
async function lockMember(trx: Knex.Transaction, organizationId: string, userId: string): Promise<{ role: string }> {
  const row = await trx('organization_members').where({ organization_id: organizationId, user_id: userId }).forUpdate().first('role');
  if (!row) throw notFound('member');
  return row;
}

export async function changeMemberRole(deps: Pick<Deps, 'db'>, actor: Caller, organizationId: string, userId: string, role: string): Promise<MemberRow> {
  return inTransaction(deps.db, async (trx) => {
    // Owners first, then the actor's (now current) role: a concurrent demotion cannot slip between.
    const owners = await lockOwners(trx, organizationId);
    const membership = await requireCurrentMembership(trx, organizationId, actor.userId, 'members.manage');
    const target = await lockMember(trx, organizationId, userId);
    const granted = await lockAssignableRole(trx, organizationId, role);
    if (!granted)
      throw badRequest(`role: the organization has no role "${role}"; use a built-in role or create it through PATCH /organizations/{organization_id}/roles`, [
        'role',
      ]);
    if (target.role !== role) {
      requireAuthorityOver(membership, { key: target.role, permissions: await rolePermissions(trx, organizationId, target.role) }, 'take away');
      requireAuthorityOver(membership, granted, 'grant');
      if (target.role === 'owner') requireAnotherOwner(owners, userId, 'taking away this owner role');
      await trx('organization_members').where({ organization_id: organizationId, user_id: userId }).update({ role, updated_at: trx.fn.now() });
      await recordActivity(trx, {
        organizationId,
        actorId: actor.userId,
        action: 'member.role_changed',
        subjectType: 'member',
        subjectId: userId,
        data: { from: target.role, to: role },
      });
    }
    return (await findMember(trx, organizationId, userId))!;
  });
}

/**
 * Ends a membership and tells the domains that kept something of the member's (access deletes their
 * resource grants, so a later re-invitation starts from nothing rather than silently reviving old
 * access), in the same transaction. Returns what they removed, for the activity entry.
 */
async function endMembership(
  deps: Pick<Deps, 'memberRemoved'>,
  trx: Knex.Transaction,
  organizationId: string,
  userId: string,
): Promise<Record<string, number>> {
  await recordMemberEvent(trx, 'member.removed', organizationId, userId);
  await trx('organization_members').where({ organization_id: organizationId, user_id: userId }).delete();
  const removed: Record<string, number> = {};
  for (const listener of deps.memberRemoved) Object.assign(removed, await listener(trx, { organizationId, userId }));
  return removed;
}

/** Removes a member (or, when it is the actor, lets them go). */
export async function removeMember(deps: Pick<Deps, 'db' | 'memberRemoved'>, actor: Caller, organizationId: string, userId: string): Promise<void> {
  await inTransaction(deps.db, async (trx) => {
    const owners = await lockOwners(trx, organizationId);
    const membership = await requireCurrentMembership(trx, organizationId, actor.userId, 'members.manage');
    const target = await lockMember(trx, organizationId, userId);
    if (userId !== actor.userId) {
      requireAuthorityOver(membership, { key: target.role, permissions: await rolePermissions(trx, organizationId, target.role) }, 'remove a member holding');
    }
    requireAnotherOwner(owners, userId, 'removing this member');
    const removed = await endMembership(deps, trx, organizationId, userId);
    await recordActivity(trx, {
      organizationId,
      actorId: actor.userId,
      action: 'member.removed',
      subjectType: 'member',
      subjectId: userId,
      data: { role: target.role, ...removed },
    });
  });
}

/** The caller leaves the organization; the last owner cannot. */
export async function leaveOrganization(deps: Pick<Deps, 'db' | 'memberRemoved'>, actor: Caller, organizationId: string): Promise<void> {
  await inTransaction(deps.db, async (trx) => {
    const owners = await lockOwners(trx, organizationId);
    const membership = await requireCurrentMembership(trx, organizationId, actor.userId);
    requireAnotherOwner(owners, actor.userId, 'leaving');
    const removed = await endMembership(deps, trx, organizationId, actor.userId);
    await recordActivity(trx, {
      organizationId,
      actorId: actor.userId,
      action: 'member.left',
      subjectType: 'member',
      subjectId: actor.userId,
      data: { role: membership.role, ...removed },
    });
  });
}
