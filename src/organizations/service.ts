import type { Knex } from 'knex';
import { recordActivity } from '../core/activity.ts';
import { conflict } from '../core/errors.ts';
import type { Actor } from '../access/index.ts';
import type { Deps } from '../platform/deps.ts';
import { addMembership, membershipsOfUser, organizationColumns } from '../members/index.ts';
import { paginate } from '../core/pagination.ts';
import type { OrganizationRow } from './presenter.ts';
import { availableSlug, isSlugTaken } from './slug.ts';
import { inTransaction } from '../db/transaction.ts';

export const columns = [...organizationColumns];

/**
 * Changes the organization's row (stamping `updated_at`) and records the change in its activity
 * feed, in the caller's transaction: every change of an organization is said once, here.
 */
export async function changeOrganization(
  trx: Knex.Transaction,
  actor: Actor,
  organizationId: string,
  values: Record<string, unknown>,
  activity: { action: string; data?: Record<string, unknown> },
): Promise<OrganizationRow> {
  const [organization] = (await trx('organizations')
    .where({ id: organizationId })
    .update({ ...values, updated_at: trx.fn.now() })
    .returning(columns)) as OrganizationRow[];
  await recordActivity(trx, { organizationId, actorId: actor.userId, subjectType: 'organization', subjectId: organizationId, ...activity });
  return organization!;
}

export async function createOrganization(
  deps: Pick<Deps, 'db' | 'organizationCreated'>,
  actor: Actor,
  input: { name: string; slug?: string | undefined },
): Promise<OrganizationRow> {
  return inTransaction(deps.db, async (trx) => {
    const organization = await insertOrganization(trx, actor, input);
    const { slug } = organization;
    await addMembership(trx, organization.id, actor.userId, 'owner');
    await recordActivity(trx, {
      organizationId: organization.id,
      actorId: actor.userId,
      action: 'organization.created',
      subjectType: 'organization',
      subjectId: organization.id,
      data: { name: input.name, slug },
    });
    // What else a new organization starts with (billing: the starter credits) is decided by the
    // listeners, in this transaction: the organization and its starting state commit together.
    for (const listener of deps.organizationCreated) await listener(trx, { organizationId: organization.id, createdById: actor.userId });
    return organization;
  });
}

/**
 * A wanted slug that is taken is the caller's 409. A slug derived from the name is ours to
 * choose: when a concurrent request takes it first, ON CONFLICT lets us move to the next one.
 */
async function insertOrganization(trx: Knex.Transaction, actor: Actor, input: { name: string; slug?: string | undefined }): Promise<OrganizationRow> {
  for (let attempt = 0; ; attempt++) {
    const slug = input.slug ?? (await availableSlug(trx, input.name));
    const [row] = (await trx('organizations')
      .insert({ name: input.name, slug, created_by_id: actor.userId })
      .onConflict('slug')
      .ignore()
      .returning(columns)) as OrganizationRow[];
    if (row) return row;
    if (input.slug || attempt >= 5) throw conflict(`slug: "${slug}" is taken`, ['slug']);
  }
}

/** The organization as its member sees it (one prepared round trip, shared with the actor's gates); 404 outside. */
export async function getOrganization(actor: Actor, organizationId: string): Promise<{ organization: OrganizationRow; role: string }> {
  const membership = await actor.member(organizationId);
  return { organization: membership.organization!, role: membership.role };
}

export async function updateOrganization(
  deps: Pick<Deps, 'db'>,
  actor: Actor,
  organizationId: string,
  changes: { name?: string | undefined; slug?: string | undefined },
): Promise<{ organization: OrganizationRow; role: string }> {
  return inTransaction(deps.db, async (trx) => {
    // The organization row is locked with the membership read, so concurrent renames apply in turn.
    const { organization: before, role } = await actor.member(organizationId, 'organization.update', { fresh: trx, lockOrganization: true });
    if (changes.slug && changes.slug !== before!.slug && (await isSlugTaken(trx, changes.slug))) throw conflict(`slug: "${changes.slug}" is taken`, ['slug']);
    const organization = await changeOrganization(trx, actor, organizationId, changes, {
      action: 'organization.updated',
      data: { before: { name: before!.name, slug: before!.slug }, after: changes },
    });
    return { organization, role };
  });
}

/** Soft delete: the organization disappears for everyone (404) but its rows stay for recovery. */
export async function deleteOrganization(deps: Pick<Deps, 'db'>, actor: Actor, organizationId: string): Promise<void> {
  await inTransaction(deps.db, async (trx) => {
    await changeOrganization(trx, actor, organizationId, { deleted_at: trx.fn.now(), deleted_by_id: actor.userId }, { action: 'organization.deleted' });
  });
}

/** Marks onboarding done. Idempotent: the first time is kept. */
export async function markOnboarded(deps: Pick<Deps, 'db'>, actor: Actor, organizationId: string): Promise<{ organization: OrganizationRow; role: string }> {
  return inTransaction(deps.db, async (trx) => {
    const membership = await actor.member(organizationId);
    const organization = await changeOrganization(
      trx,
      actor,
      organizationId,
      { onboarded_at: trx.raw('coalesce(onboarded_at, now())') },
      { action: 'organization.onboarded' },
    );
    return { organization, role: membership.role };
  });
}

/**
 * The caller's organizations (live ones they are a member of), by name then id, keyset paged:
 * how a token holder finds the organizations that exist for them.
 */
export async function listOrganizationsOfCaller(deps: Pick<Deps, 'db'>, actor: Actor, page: { limit: number; cursor?: string | undefined }) {
  const query = membershipsOfUser(deps.db, actor.userId).select(...organizationColumns.map((column) => `o.${column}`), 'm.role');
  return paginate<OrganizationRow & { role: string }>(
    query,
    [
      { column: 'o.name', direction: 'asc', type: 'text' },
      { column: 'o.id', direction: 'asc', type: 'text' },
    ],
    page,
  );
}
