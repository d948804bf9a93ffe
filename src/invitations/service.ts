import { recordEvent } from '../core/events.ts';
import { recordActivity } from '../core/activity.ts';
import { conflict, forbidden } from '../core/errors.ts';
import { paginate, type Page, newestFirst } from '../core/pagination.ts';
import type { Actor } from '../access/index.ts';
import { addMembership, hasMemberWithEmail, lockAssignableRole, requireAuthorityOver } from '../members/index.ts';
import type { Deps } from '../platform/deps.ts';
import { loadInvitation, requireAssignableRole, requireInvitee, requireManager, type InvitationAccess } from './access.ts';
import { invitationEmailJob } from './jobs.ts';
import { effectiveStatusSql, invitationColumns, type InvitationRow, presentInvitation } from './presenter.ts';
import { INVITATION_TTL_DAYS, type InvitationStatus } from './schema.ts';
import { inTransaction } from '../db/transaction.ts';

const subject = (invitation: { id: string }) => ({ subjectType: 'invitation', subjectId: invitation.id });

async function reload(trx: Deps['db'], id: string): Promise<InvitationRow> {
  return (await trx('invitations as i').where('i.id', id).first(invitationColumns(trx))) as InvitationRow;
}

function requirePending(invitation: InvitationRow): void {
  if (invitation.status !== 'pending') throw conflict(`status: the invitation is ${invitation.status}, not pending`, ['status']);
}

export async function createInvitation(
  deps: Pick<Deps, 'db' | 'jobs'>,
  actor: Actor,
  organizationId: string,
  input: { email: string; role: string },
): Promise<InvitationRow> {
  return inTransaction(deps.db, async (trx) => {
    // The inviter's role as it is now, locked: a concurrent demotion either is seen here or waits for this invitation.
    const inviter = await actor.member(organizationId, 'invitations.manage', { fresh: trx });
    await requireAssignableRole(trx, inviter, input.role);
    // A lapsed invitation no longer blocks a new one for the same address.
    await trx('invitations')
      .where({ organization_id: organizationId, email: input.email, status: 'pending' })
      .where('expires_at', '<=', trx.fn.now())
      .update({ status: 'expired', updated_at: trx.fn.now() });
    if (await trx('invitations').where({ organization_id: organizationId, email: input.email, status: 'pending' }).first('id')) {
      throw conflict(`email: ${input.email} already has a pending invitation`, ['email']);
    }
    if (await hasMemberWithEmail(trx, organizationId, input.email)) throw conflict(`email: ${input.email} is already a member of the organization`, ['email']);

    const [created] = await trx('invitations')
      .insert({
        organization_id: organizationId,
        email: input.email,
        role: input.role,
        invited_by_id: actor.userId,
        expires_at: trx.raw(`now() + interval '${INVITATION_TTL_DAYS} days'`),
      })
      .returning('id');
    await deps.jobs.enqueue(trx, invitationEmailJob, { invitation_id: created.id }, { organizationId });
    await recordActivity(trx, {
      organizationId,
      actorId: actor.userId,
      action: 'invitation.created',
      ...subject(created),
      data: { email: input.email, role: input.role },
    });
    return reload(trx, created.id);
  });
}

export async function listInvitations(
  deps: Pick<Deps, 'db'>,
  organizationId: string,
  query: { status?: InvitationStatus | undefined; limit: number; cursor?: string | undefined },
): Promise<Page<InvitationRow>> {
  const rows = deps.db('invitations as i').where('i.organization_id', organizationId).select(invitationColumns(deps.db));
  if (query.status) rows.whereRaw(`${effectiveStatusSql('i')} = ?`, [query.status]);
  return paginate<InvitationRow & Record<string, unknown>>(rows, newestFirst('i'), query);
}

/** Managers of invitations and the invitee may read it; other members get 403. */
export async function getInvitation(deps: Pick<Deps, 'db'>, actor: Actor, organizationId: string, invitationId: string): Promise<InvitationRow> {
  const access = await loadInvitation(deps.db, actor, organizationId, invitationId);
  if (!access.isInvitee) requireManager(access);
  return access.invitation;
}

export async function changeInvitationRole(
  deps: Pick<Deps, 'db'>,
  actor: Actor,
  organizationId: string,
  invitationId: string,
  role: string,
): Promise<InvitationRow> {
  return inTransaction(deps.db, async (trx) => {
    const access = await loadInvitation(trx, actor, organizationId, invitationId, true);
    const manager = requireManager(access);
    const { invitation } = access;
    requirePending(invitation);
    await requireAssignableRole(trx, manager, role, 'grant');
    if (invitation.role === 'owner' && manager.role !== 'owner') throw forbidden('only owners may change or revoke an owner invitation');
    if (role === invitation.role) return invitation;
    // Like a member's role change, the role taken away needs authority too (unless it was deleted since).
    const before = await lockAssignableRole(trx, organizationId, invitation.role);
    if (before) requireAuthorityOver(manager, before, 'take away');
    await trx('invitations').where({ id: invitationId }).update({ role, updated_at: trx.fn.now() });
    await recordActivity(trx, {
      organizationId,
      actorId: actor.userId,
      action: 'invitation.role_changed',
      ...subject(invitation),
      data: { email: invitation.email, before: invitation.role, after: role },
    });
    return reload(trx, invitationId);
  });
}

/** The invitee joins with the invited role; membership and invitation change in one transaction. */
export async function acceptInvitation(deps: Pick<Deps, 'db'>, actor: Actor, organizationId: string, invitationId: string): Promise<InvitationRow> {
  return inTransaction(deps.db, async (trx) => {
    const access = await loadInvitation(trx, actor, organizationId, invitationId, true);
    const { invitation } = inviteeOnly(access, 'accept');
    if (access.membership) throw conflict('you are already a member of the organization');
    // Share-locked: a concurrent deletion of the role waits, then sees this new holder (409).
    if (!(await lockAssignableRole(trx, organizationId, invitation.role)))
      throw conflict(`role: the invited role "${invitation.role}" no longer exists; ask for a new invitation`, ['role']);
    await addMembership(trx, organizationId, actor.userId, invitation.role);
    await trx('invitations')
      .where({ id: invitationId })
      .update({ status: 'accepted', accepted_at: trx.fn.now(), accepted_by_id: actor.userId, updated_at: trx.fn.now() });
    await recordActivity(trx, {
      organizationId,
      actorId: actor.userId,
      action: 'invitation.accepted',
      ...subject(invitation),
      data: { email: invitation.email, role: invitation.role },
    });
    await recordActivity(trx, {
      organizationId,
      actorId: actor.userId,
      action: 'member.joined',
      subjectType: 'member',
      subjectId: actor.userId,
      data: { role: invitation.role, invitation_id: invitationId },
    });
    const accepted = await reload(trx, invitationId);
    await recordEvent(trx, { organizationId, type: 'invitation.accepted', subject: null, object: presentInvitation(accepted) });
    return accepted;
  });
}

export async function declineInvitation(deps: Pick<Deps, 'db'>, actor: Actor, organizationId: string, invitationId: string): Promise<InvitationRow> {
  return inTransaction(deps.db, async (trx) => {
    const { invitation } = inviteeOnly(await loadInvitation(trx, actor, organizationId, invitationId, true), 'decline');
    await trx('invitations').where({ id: invitationId }).update({ status: 'declined', declined_at: trx.fn.now(), updated_at: trx.fn.now() });
    await recordActivity(trx, {
      organizationId,
      actorId: actor.userId,
      action: 'invitation.declined',
      ...subject(invitation),
      data: { email: invitation.email },
    });
    return reload(trx, invitationId);
  });
}

export async function revokeInvitation(deps: Pick<Deps, 'db'>, actor: Actor, organizationId: string, invitationId: string): Promise<void> {
  await inTransaction(deps.db, async (trx) => {
    const access = await loadInvitation(trx, actor, organizationId, invitationId, true);
    const manager = requireManager(access);
    const { invitation } = access;
    if (invitation.role === 'owner' && manager.role !== 'owner') throw forbidden('only owners may change or revoke an owner invitation');
    requirePending(invitation);
    await trx('invitations')
      .where({ id: invitationId })
      .update({ status: 'revoked', revoked_at: trx.fn.now(), revoked_by_id: actor.userId, updated_at: trx.fn.now() });
    await recordActivity(trx, {
      organizationId,
      actorId: actor.userId,
      action: 'invitation.revoked',
      ...subject(invitation),
      data: { email: invitation.email },
    });
  });
}

function inviteeOnly(access: InvitationAccess, action: 'accept' | 'decline'): InvitationAccess {
  requireInvitee(access, action);
  requirePending(access.invitation);
  return access;
}
