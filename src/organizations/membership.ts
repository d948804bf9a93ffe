import type { Knex } from 'knex';
import { forbidden, notFound } from '../core/errors.ts';
import { builtInRolePermissions, isBuiltInRole, type OrganizationPermission } from './permissions.ts';

export interface Membership {
  organizationId: string;
  userId: string;
  role: string;
  permissions: ReadonlySet<OrganizationPermission>;
}

/**
 * The caller's membership of a live organization, or 404: to a non-member an organization does
 * not exist (ids cannot be probed). Pass a transaction and `forUpdate` to lock the member row.
 */
export async function requireMember(db: Knex, organizationId: string, userId: string): Promise<Membership> {
  const row = await db('organization_members as m')
    .join('organizations as o', 'o.id', 'm.organization_id')
    .where({ 'm.organization_id': organizationId, 'm.user_id': userId })
    .whereNull('o.deleted_at')
    .first('m.role');
  if (!row) throw notFound('organization');
  return { organizationId, userId, role: row.role, permissions: await permissionsOf(db, organizationId, row.role) };
}

/** 403 naming the missing permission (the caller is a member, so the organization is readable). */
export function requirePermission(membership: Membership, permission: OrganizationPermission): void {
  if (!membership.permissions.has(permission)) {
    throw forbidden(`your role "${membership.role}" lacks the permission ${permission}`);
  }
}

export async function requireMemberWith(db: Knex, organizationId: string, userId: string, permission: OrganizationPermission): Promise<Membership> {
  const membership = await requireMember(db, organizationId, userId);
  requirePermission(membership, permission);
  return membership;
}

/** Permissions of a role: the fixed matrix for built-in roles, the stored list for custom ones. */
export async function permissionsOf(db: Knex, organizationId: string, role: string): Promise<ReadonlySet<OrganizationPermission>> {
  if (isBuiltInRole(role)) return builtInRolePermissions[role];
  const custom = await db('organization_roles').where({ organization_id: organizationId, key: role }).first('permissions');
  return new Set<OrganizationPermission>((custom?.permissions as OrganizationPermission[] | undefined) ?? []);
}
