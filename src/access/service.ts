import type { Knex } from 'knex';
import { recordActivity } from '../core/activity.ts';
import { badRequest, conflict, forbidden, notFound } from '../core/errors.ts';
import type { Actor } from './actor.ts';
import type { Deps, MemberRemoved } from '../platform/deps.ts';
import { lockMemberForShare } from '../members/index.ts';
import { nounOf } from './registry.ts';
import { requireLive } from './lifecycle.ts';
import { allows } from './policies/index.ts';
import { accessRecord, type AccessRecord } from './record.ts';
import type { Capability, GrantRole, ResourceType } from './types.ts';
import { inTransaction } from '../db/transaction.ts';

export interface GrantView {
  id: string;
  user_id: string;
  role: GrantRole;
  granted_by_id: string | null;
  created_at: string;
}

const grantColumns = ['id', 'user_id', 'role', 'granted_by_id', 'created_at'];
const presentGrant = (g: Record<string, any>): GrantView => ({
  id: g.id,
  user_id: g.user_id,
  role: g.role,
  granted_by_id: g.granted_by_id,
  created_at: (g.created_at as Date).toISOString(),
});

/** GET /access/{type}/{id} (and the per-type `/access` reads). */
export async function getAccessRecord(deps: Pick<Deps, 'db'>, actor: Actor, type: ResourceType, id: string): Promise<AccessRecord> {
  const { row, role, viewer } = await actor.resource(deps.db, type, id, 'read');
  return accessRecord(deps.db, type, row, role, viewer);
}

/** Each general-access field is authorized on its own (spec 4.7), resent unchanged values included. */
const generalAccessFieldCapability: Record<'visibility' | 'workspace_role', Capability> = {
  visibility: 'change_general_access',
  workspace_role: 'change_general_access',
};

export async function updateGeneralAccess(
  deps: Pick<Deps, 'db'>,
  actor: Actor,
  type: ResourceType,
  id: string,
  changes: { visibility?: 'private' | 'workspace' | undefined; workspace_role?: 'viewer' | 'editor' | undefined },
): Promise<AccessRecord> {
  return inTransaction(deps.db, async (trx) => {
    const { row, role, entry } = await actor.resource(trx, type, id, 'read', { forUpdate: true });
    for (const field of ['visibility', 'workspace_role'] as const) {
      if (changes[field] !== undefined && !allows(type, role, generalAccessFieldCapability[field])) {
        throw forbidden(`${field}: your role on this ${nounOf(type)} is "${role}"; changing general access needs the owner role`);
      }
    }
    requireLive(row, type);
    await trx(entry.table)
      .where({ id })
      .update({ ...changes, updated_at: trx.fn.now() });
    await recordActivity(trx, {
      organizationId: row.organization_id,
      actorId: actor.userId,
      action: 'access.general_access_updated',
      subjectType: type,
      subjectId: id,
      data: { before: { visibility: row.visibility, workspace_role: row.workspace_role }, after: changes },
    });
    const after = await actor.resource(trx, type, id, 'read');
    return accessRecord(trx, type, after.row, after.role, after.viewer);
  });
}

/** Only members of the resource's organization can be granted; the owner already holds everything. Duplicates are 409 (change a role with PATCH). */
export async function createGrant(
  deps: Pick<Deps, 'db'>,
  actor: Actor,
  type: ResourceType,
  id: string,
  input: { user_id: string; role: GrantRole },
): Promise<GrantView> {
  return inTransaction(deps.db, async (trx) => {
    const { row } = await actor.resource(trx, type, id, 'manage_people', { forUpdate: true });
    requireLive(row, type);
    // FOR SHARE: a removal of this member waits for us (and then deletes this grant too), or we see it gone.
    if (!(await lockMemberForShare(trx, row.organization_id, input.user_id)))
      throw badRequest(`user_id: "${input.user_id}" is not a member of the ${nounOf(type)}'s organization`, ['user_id']);
    if (input.user_id === row.created_by_id) throw badRequest(`user_id: "${input.user_id}" owns this ${nounOf(type)} already`, ['user_id']);
    const existing = await trx('resource_grants').where({ resource_type: type, resource_id: id, user_id: input.user_id }).first('id');
    if (existing)
      throw conflict(`user_id: "${input.user_id}" already has a grant on this ${nounOf(type)}; change its role with PATCH .../grants/${existing.id}`, [
        'user_id',
      ]);
    const [grant] = await trx('resource_grants')
      .insert({
        organization_id: row.organization_id,
        resource_type: type,
        resource_id: id,
        user_id: input.user_id,
        role: input.role,
        granted_by_id: actor.userId,
      })
      .returning(grantColumns);
    await recordActivity(trx, {
      organizationId: row.organization_id,
      actorId: actor.userId,
      action: 'access.grant_created',
      subjectType: type,
      subjectId: id,
      data: { grant_id: grant.id, user_id: input.user_id, role: input.role },
    });
    return presentGrant(grant);
  });
}

export async function updateGrant(
  deps: Pick<Deps, 'db'>,
  actor: Actor,
  type: ResourceType,
  id: string,
  grantId: string,
  input: { role: GrantRole },
): Promise<GrantView> {
  return inTransaction(deps.db, async (trx) => {
    const { row } = await actor.resource(trx, type, id, 'manage_people', { forUpdate: true });
    requireLive(row, type);
    const before = await grantOf(trx, type, id, grantId);
    const [grant] = await trx('resource_grants').where({ id: grantId }).update({ role: input.role, updated_at: trx.fn.now() }).returning(grantColumns);
    await recordActivity(trx, {
      organizationId: row.organization_id,
      actorId: actor.userId,
      action: 'access.grant_updated',
      subjectType: type,
      subjectId: id,
      data: { grant_id: grantId, user_id: before.user_id, before: { role: before.role }, after: { role: input.role } },
    });
    return presentGrant(grant);
  });
}

/** Owners remove anyone's grant; a grantee may remove their own (leave). */
export async function deleteGrant(deps: Pick<Deps, 'db'>, actor: Actor, type: ResourceType, id: string, grantId: string): Promise<void> {
  await inTransaction(deps.db, async (trx) => {
    const { row, role } = await actor.resource(trx, type, id, 'read', { forUpdate: true });
    const grant = await grantOf(trx, type, id, grantId);
    const leaving = grant.user_id === actor.userId;
    if (!leaving && !allows(type, role, 'manage_people'))
      throw forbidden(`your role on this ${nounOf(type)} is "${role}"; removing someone else's grant needs the owner role`);
    await trx('resource_grants').where({ id: grantId }).delete();
    await recordActivity(trx, {
      organizationId: row.organization_id,
      actorId: actor.userId,
      action: leaving ? 'access.left' : 'access.grant_deleted',
      subjectType: type,
      subjectId: id,
      data: { grant_id: grantId, user_id: grant.user_id, role: grant.role },
    });
  });
}

async function grantOf(trx: Knex, type: ResourceType, id: string, grantId: string) {
  const grant = await trx('resource_grants').where({ id: grantId, resource_type: type, resource_id: id }).forUpdate().first('id', 'user_id', 'role');
  if (!grant) throw notFound('grant');
  return grant as { id: string; user_id: string; role: GrantRole };
}

/**
 * A membership ended (the `Deps.memberRemoved` listener): the grants the user held on the
 * organization's resources go with it, in that transaction.
 */
export async function revokeGrantsOfRemovedMember(trx: Knex.Transaction, event: MemberRemoved): Promise<{ grants_removed: number }> {
  const grantsRemoved = await trx('resource_grants').where({ organization_id: event.organizationId, user_id: event.userId }).delete();
  return { grants_removed: grantsRemoved };
}
