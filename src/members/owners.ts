import type { Knex } from 'knex';
import { conflict } from '../core/errors.ts';

/**
 * Locks every owner row of the organization (in a fixed order, so concurrent callers cannot
 * deadlock) and returns the owners' ids. Taken first by every change that can remove an owner:
 * a concurrent demotion waits, then re-reads the rows and sees one owner fewer.
 */
export async function lockOwners(trx: Knex.Transaction, organizationId: string): Promise<string[]> {
  return (await trx('organization_members')
    .where({ organization_id: organizationId, role: 'owner' })
    .orderBy('user_id')
    .forUpdate()
    .pluck('user_id')) as string[];
}

/** 409 when `userId` is the only owner left: an organization always keeps at least one. */
export function requireAnotherOwner(owners: readonly string[], userId: string, doing: string): void {
  if (owners.includes(userId) && owners.length <= 1) {
    throw conflict(`${doing} would leave the organization without an owner; make another member an owner first`);
  }
}
