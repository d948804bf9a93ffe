import type { Knex } from 'knex';

// What other domains ask of an organization. The organizations domain owns the `organizations`
// table (the members domain reads it only inside the membership read, one statement with the
// member row); everyone else calls these, passing the transaction or connection they run in.

/** Live (not deleted) organizations `o`, to join and select from in one statement (e.g. billing's refill sweep). */
export function liveOrganizations(db: Knex): Knex.QueryBuilder {
  return db('organizations as o').whereNull('o.deleted_at');
}

/** Whether the organization exists and is not deleted. */
export async function isLiveOrganization(db: Knex, organizationId: string): Promise<boolean> {
  return Boolean(await liveOrganizations(db).where('o.id', organizationId).first('o.id'));
}

/** Whether the organization exists, deleted or not (a soft delete keeps its row). */
export async function organizationExists(db: Knex, organizationId: string): Promise<boolean> {
  return Boolean(await db('organizations').where({ id: organizationId }).first('id'));
}

/** The organization's name, or undefined; `live` leaves a deleted organization out. */
export async function organizationName(db: Knex, organizationId: string, options: { live?: boolean } = {}): Promise<string | undefined> {
  const query = db('organizations').where({ id: organizationId });
  if (options.live) query.whereNull('deleted_at');
  return ((await query.first('name')) as { name: string } | undefined)?.name;
}

/** Names by id, deleted organizations included (the job console names every tenant it shows). */
export async function organizationNames(db: Knex, organizationIds: readonly string[]): Promise<Map<string, string>> {
  if (organizationIds.length === 0) return new Map();
  const rows = (await db('organizations').whereIn('id', organizationIds).select('id', 'name')) as { id: string; name: string }[];
  return new Map(rows.map((row) => [row.id, row.name]));
}

/** When the organization was created (its billing periods are anchored there). */
export async function organizationCreatedAt(db: Knex, organizationId: string): Promise<Date | undefined> {
  return ((await db('organizations').where({ id: organizationId }).first('created_at')) as { created_at: Date } | undefined)?.created_at;
}

/**
 * Locks the organization's row until the transaction ends: changes that must happen one at a time
 * per organization (a custom role under the limit, the one billing customer) take it first.
 */
export async function lockOrganization(trx: Knex.Transaction, organizationId: string): Promise<void> {
  await trx('organizations').where({ id: organizationId }).forUpdate().first('id');
}
