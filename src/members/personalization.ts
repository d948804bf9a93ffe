import { recordActivity } from '../core/activity.ts';
import { forbidden } from '../core/errors.ts';
import type { Caller } from '../core/caller.ts';
import type { Deps } from '../platform/deps.ts';
import type { Personalization } from './presenter.ts';
import { inTransaction } from '../db/transaction.ts';

interface PersonalizationRow {
  display_name: string | null;
  job_title: string | null;
  timezone: string | null;
  preferences: Record<string, unknown>;
  updated_at: Date;
}

const columns = ['display_name', 'job_title', 'timezone', 'preferences', 'updated_at'];

const fromRow = (userId: string, row: PersonalizationRow | undefined): Personalization => ({
  userId,
  displayName: row?.display_name ?? null,
  jobTitle: row?.job_title ?? null,
  timezone: row?.timezone ?? null,
  preferences: row?.preferences ?? {},
  updatedAt: row?.updated_at ?? null,
});

/** Personal settings are the member's own: other members get 403 (non-members got 404 at the route). */
function requireSelf(actor: Caller, userId: string): void {
  if (userId !== actor.userId) throw forbidden('user_id: only the member themself may read or change their personalization');
}

export async function getPersonalization(deps: Pick<Deps, 'db'>, actor: Caller, organizationId: string, userId: string): Promise<Personalization> {
  requireSelf(actor, userId);
  const row = (await deps.db('organization_member_personalizations').where({ organization_id: organizationId, user_id: userId }).first(columns)) as
    | PersonalizationRow
    | undefined;
  return fromRow(userId, row);
}

export interface PersonalizationChanges {
  display_name?: string | null | undefined;
  job_title?: string | null | undefined;
  timezone?: string | null | undefined;
  preferences?: Record<string, unknown> | undefined;
}

export async function updatePersonalization(
  deps: Pick<Deps, 'db'>,
  actor: Caller,
  organizationId: string,
  userId: string,
  changes: PersonalizationChanges,
): Promise<Personalization> {
  return inTransaction(deps.db, async (trx) => {
    requireSelf(actor, userId);
    const values = Object.fromEntries(Object.entries(changes).filter(([, value]) => value !== undefined));
    const [row] = (await trx('organization_member_personalizations')
      .insert({ organization_id: organizationId, user_id: userId, ...values })
      .onConflict(['organization_id', 'user_id'])
      .merge({ ...values, updated_at: trx.fn.now() })
      .returning(columns)) as PersonalizationRow[];
    // The values are private to the member; the shared feed only says which fields changed.
    await recordActivity(trx, {
      organizationId,
      actorId: actor.userId,
      action: 'member.personalization_updated',
      subjectType: 'member',
      subjectId: userId,
      data: { fields: Object.keys(values).sort() },
    });
    return fromRow(userId, row);
  });
}
