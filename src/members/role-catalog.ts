import type { Knex } from 'knex';
import { memberCountsByRole } from './membership.ts';
import { builtInRolePermissions, builtInRoles, isBuiltInRole, type OrganizationPermission, type Role } from './permissions.ts';

const builtInDescriptions = {
  owner: {
    name: 'Owner',
    description: 'Everything, including deleting the organization and managing billing. An organization always keeps at least one owner.',
  },
  admin: { name: 'Admin', description: 'Runs the organization: members, invitations, roles, settings and credits; cannot delete it or manage billing.' },
  member: { name: 'Member', description: 'Works in the organization: creates resources, sees members, activity and credits.' },
} as const;

export const builtInRoleList: readonly Role[] = builtInRoles.map((key) => ({
  key,
  ...builtInDescriptions[key],
  builtIn: true,
  permissions: builtInRolePermissions[key],
  createdAt: null,
  updatedAt: null,
}));

interface RoleRow {
  key: string;
  name: string;
  description: string | null;
  permissions: string[];
  created_at: Date;
  updated_at: Date;
}

export const roleColumns = ['key', 'name', 'description', 'permissions', 'created_at', 'updated_at'];

export function roleFromRow(row: RoleRow): Role {
  return {
    key: row.key,
    name: row.name,
    description: row.description,
    builtIn: false,
    permissions: new Set(row.permissions as OrganizationPermission[]),
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

/** Every role of an organization: the built-in ones first, then the custom ones by key. */
export async function rolesOf(db: Knex, organizationId: string): Promise<Role[]> {
  const rows = (await db('organization_roles').where({ organization_id: organizationId }).orderBy('key').select(roleColumns)) as RoleRow[];
  return [...builtInRoleList, ...rows.map(roleFromRow)];
}

/**
 * A role that can be assigned right now, or null when the organization has no such role. Custom
 * roles are share-locked so a concurrent delete waits for (and then sees) the assignment.
 */
export async function lockAssignableRole(trx: Knex.Transaction, organizationId: string, key: string): Promise<Role | null> {
  if (isBuiltInRole(key)) return builtInRoleList.find((role) => role.key === key)!;
  const row = (await trx('organization_roles').where({ organization_id: organizationId, key }).forShare().first(roleColumns)) as RoleRow | undefined;
  return row ? roleFromRow(row) : null;
}

/** A custom role locked for change or deletion (a concurrent assignment, which share-locks it, finishes first); undefined when there is none. */
export async function lockCustomRole(trx: Knex.Transaction, organizationId: string, key: string): Promise<RoleRow | undefined> {
  return (await trx('organization_roles').where({ organization_id: organizationId, key }).forUpdate().first(roleColumns)) as RoleRow | undefined;
}

/** How many custom roles the organization has (callers serialise creates on the organization's lock). */
export async function countCustomRoles(trx: Knex.Transaction, organizationId: string): Promise<number> {
  const [{ count }] = (await trx('organization_roles').where({ organization_id: organizationId }).count('* as count')) as [{ count: number | string }];
  return Number(count);
}

/** Creates or changes a custom role (`exists`: the caller locked it with lockCustomRole). */
export async function saveCustomRole(
  trx: Knex.Transaction,
  organizationId: string,
  key: string,
  values: { name: string; description: string | null; permissions: string[] },
  exists: boolean,
): Promise<RoleRow> {
  const [row] = exists
    ? await trx('organization_roles')
        .where({ organization_id: organizationId, key })
        .update({ ...values, updated_at: trx.fn.now() })
        .returning(roleColumns)
    : await trx('organization_roles')
        .insert({ organization_id: organizationId, key, ...values })
        .returning(roleColumns);
  return row as RoleRow;
}

/** Deletes a custom role (alert policies naming it forget it in the same transaction: trigger, migration 20261123030000). */
export async function deleteCustomRole(trx: Knex.Transaction, organizationId: string, key: string): Promise<void> {
  await trx('organization_roles').where({ organization_id: organizationId, key }).delete();
}

/** Members per role key. */
export async function memberCounts(db: Knex, organizationId: string): Promise<Map<string, number>> {
  return memberCountsByRole(db, organizationId);
}
