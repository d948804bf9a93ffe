import type { Knex } from 'knex';
import { recordActivity } from '../activity/record.ts';
import { queryPrepared } from '../db/prepared.ts';
import { grantStarterCredits } from '../credits/ledger.ts';
import { conflict, notFound } from '../core/errors.ts';
import type { Caller } from '../core/caller.ts';
import type { Deps } from '../platform/deps.ts';
import { permissionsOf, requirePermission, requireMemberWith } from './membership.ts';
import type { OrganizationRow } from './presenter.ts';
import { availableSlug, isSlugTaken } from './slug.ts';

export const columns = ['id', 'name', 'slug', 'logo_key', 'logo_updated_at', 'onboarded_at', 'created_by_id', 'created_at', 'updated_at'];

export async function createOrganization(deps: Deps, caller: Caller, input: { name: string; slug?: string | undefined }): Promise<OrganizationRow> {
  return deps.db.transaction(async (trx) => {
    const organization = await insertOrganization(trx, caller, input);
    const { slug } = organization;
    await trx('organization_members').insert({ organization_id: organization.id, user_id: caller.userId, role: 'owner' });
    await recordActivity(trx, { organizationId: organization.id, actorId: caller.userId, action: 'organization.created', subjectType: 'organization', subjectId: organization.id, data: { name: input.name, slug } });
    // Sandbox billing gives every new organization its starter credits; with a real billing
    // provider, credits come from purchases and plan cycles.
    if (deps.providers.billing.name === 'sandbox') await grantStarterCredits(trx, organization.id, deps.config.STARTER_CREDITS);
    return organization;
  });
}

/**
 * A wanted slug that is taken is the caller's 409. A slug derived from the name is ours to
 * choose: when a concurrent request takes it first, ON CONFLICT lets us move to the next one.
 */
async function insertOrganization(trx: Knex.Transaction, caller: Caller, input: { name: string; slug?: string | undefined }): Promise<OrganizationRow> {
  for (let attempt = 0; ; attempt++) {
    const slug = input.slug ?? (await availableSlug(trx, input.name));
    const [row] = (await trx('organizations')
      .insert({ name: input.name, slug, created_by_id: caller.userId })
      .onConflict('slug')
      .ignore()
      .returning(columns)) as OrganizationRow[];
    if (row) return row;
    if (input.slug || attempt >= 5) throw conflict(`slug: "${slug}" is taken`, ['slug']);
  }
}

/**
 * In a transaction: the organization, locked, with the caller's role in one round trip, or 404
 * for non-members and deleted organizations (as `requireMember`; the same join as getOrganization).
 */
async function lockMemberOrganization(trx: Knex.Transaction, organizationId: string, userId: string): Promise<{ organization: OrganizationRow; role: string }> {
  const row = (await trx('organization_members as m')
    .join('organizations as o', 'o.id', 'm.organization_id')
    .where({ 'm.organization_id': organizationId, 'm.user_id': userId })
    .whereNull('o.deleted_at')
    .forUpdate('o')
    .first(...columns.map((column) => `o.${column}`), 'm.role')) as (OrganizationRow & { role: string }) | undefined;
  if (!row) throw notFound('organization');
  const { role, ...organization } = row;
  return { organization, role };
}

const memberOrganizationSql = `SELECT ${columns.map((column) => `o.${column}`).join(', ')}, m.role
  FROM organization_members m JOIN organizations o ON o.id = m.organization_id
  WHERE m.organization_id = $1 AND m.user_id = $2 AND o.deleted_at IS NULL`;

/** The hottest read of the API: membership and organization in one prepared statement (see queryPrepared); 404 as `requireMember`. */
export async function getOrganization(deps: Deps, caller: Caller, organizationId: string): Promise<{ organization: OrganizationRow; role: string }> {
  const [row] = await queryPrepared<OrganizationRow & { role: string }>(deps.db, 'get-organization', memberOrganizationSql, [organizationId, caller.userId]);
  if (!row) throw notFound('organization');
  const { role, ...organization } = row;
  return { organization, role };
}

export async function updateOrganization(
  deps: Deps,
  caller: Caller,
  organizationId: string,
  changes: { name?: string | undefined; slug?: string | undefined },
): Promise<{ organization: OrganizationRow; role: string }> {
  return deps.db.transaction(async (trx) => {
    const { organization: before, role } = await lockMemberOrganization(trx, organizationId, caller.userId);
    const permissions = await permissionsOf(trx, organizationId, role);
    requirePermission({ organizationId, userId: caller.userId, role, permissions }, 'organization.update');
    if (changes.slug && changes.slug !== before.slug && (await isSlugTaken(trx, changes.slug))) throw conflict(`slug: "${changes.slug}" is taken`, ['slug']);
    const [organization] = (await trx('organizations')
      .where({ id: organizationId })
      .update({ ...changes, updated_at: trx.fn.now() })
      .returning(columns)) as OrganizationRow[];
    await recordActivity(trx, { organizationId, actorId: caller.userId, action: 'organization.updated', subjectType: 'organization', subjectId: organizationId, data: { before: { name: before.name, slug: before.slug }, after: changes } });
    return { organization: organization!, role };
  });
}

/** Soft delete: the organization disappears for everyone (404) but its rows stay for recovery. */
export async function deleteOrganization(deps: Deps, caller: Caller, organizationId: string): Promise<void> {
  await deps.db.transaction(async (trx) => {
    await requireMemberWith(trx, organizationId, caller.userId, 'organization.delete');
    await trx('organizations').where({ id: organizationId }).update({ deleted_at: trx.fn.now(), deleted_by_id: caller.userId, updated_at: trx.fn.now() });
    await recordActivity(trx, { organizationId, actorId: caller.userId, action: 'organization.deleted', subjectType: 'organization', subjectId: organizationId });
  });
}

/** Marks onboarding done. Idempotent: the first time is kept. */
export async function markOnboarded(deps: Deps, caller: Caller, organizationId: string): Promise<{ organization: OrganizationRow; role: string }> {
  return deps.db.transaction(async (trx) => {
    const membership = await requireMemberWith(trx, organizationId, caller.userId, 'organization.update');
    const [organization] = (await trx('organizations')
      .where({ id: organizationId })
      .update({ onboarded_at: trx.raw('coalesce(onboarded_at, now())'), updated_at: trx.fn.now() })
      .returning(columns)) as OrganizationRow[];
    await recordActivity(trx, { organizationId, actorId: caller.userId, action: 'organization.onboarded', subjectType: 'organization', subjectId: organizationId });
    return { organization: organization!, role: membership.role };
  });
}
