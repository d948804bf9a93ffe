import type { Knex } from 'knex';

// The roles domain owns organization_roles: every other domain reads a custom role through these
// functions (members, for a membership's permissions). This module imports no other domain, so a
// domain that roles builds on (members) may call it without an import cycle.

/** A custom role as stored. */
export interface CustomRoleRow {
  key: string;
  name: string;
  description: string | null;
  permissions: string[];
  created_at: Date;
  updated_at: Date;
}

export const customRoleColumns = ['key', 'name', 'description', 'permissions', 'created_at', 'updated_at'];

/**
 * SQL joining member rows `member` to their custom role as `alias` (no row for a built-in role),
 * so a membership read gets the role's permissions in the same statement. The join takes no lock:
 * a membership read that decides on the role locks the member row (members' lockMembership), and a
 * role's permissions change only under the lock roles' saveRole takes on the role row.
 */
export const customRoleJoinSql = (member = 'm', alias = 'mr') =>
  `LEFT JOIN organization_roles ${alias} ON ${alias}.organization_id = ${member}.organization_id AND ${alias}.key = ${member}.role`;

/** customRoleJoinSql on a query builder over member rows `m`: their custom role as `mr`. */
export const joinCustomRole = (query: Knex.QueryBuilder): Knex.QueryBuilder =>
  query.leftJoin('organization_roles as mr', (on) => on.on('mr.organization_id', 'm.organization_id').andOn('mr.key', 'm.role'));

/** The stored permissions of a custom role, or null when the organization has no such custom role. */
export async function customRolePermissions(db: Knex, organizationId: string, key: string): Promise<string[] | null> {
  const row = await db('organization_roles').where({ organization_id: organizationId, key }).first('permissions');
  return (row?.permissions as string[] | undefined) ?? null;
}

/** The organization's custom roles, by key. */
export async function customRolesOf(db: Knex, organizationId: string): Promise<CustomRoleRow[]> {
  return (await db('organization_roles').where({ organization_id: organizationId }).orderBy('key').select(customRoleColumns)) as CustomRoleRow[];
}

/**
 * A custom role, share-locked until `trx` ends: a concurrent delete of the role waits for (and then
 * sees) what `trx` did with it, e.g. assign it to a member.
 */
export async function shareLockCustomRole(trx: Knex.Transaction, organizationId: string, key: string): Promise<CustomRoleRow | undefined> {
  return (await trx('organization_roles').where({ organization_id: organizationId, key }).forShare().first(customRoleColumns)) as CustomRoleRow | undefined;
}
