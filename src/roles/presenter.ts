import type { z } from '../core/zod.ts';
import { organizationPermissions, type OrganizationPermission } from '../members/permissions.ts';
import type { roleSchema } from './schema.ts';

export interface Role {
  key: string;
  name: string;
  description: string | null;
  builtIn: boolean;
  permissions: ReadonlySet<OrganizationPermission>;
  createdAt: Date | null;
  updatedAt: Date | null;
}

/** Permissions in the order of the documented matrix, so lists compare and diff cleanly. */
export const orderedPermissions = (permissions: Iterable<OrganizationPermission>): OrganizationPermission[] => {
  const held = new Set(permissions);
  return organizationPermissions.filter((permission) => held.has(permission));
};

export function presentRole(role: Role, memberCount: number): z.input<typeof roleSchema> {
  return {
    key: role.key,
    name: role.name,
    description: role.description,
    built_in: role.builtIn,
    permissions: orderedPermissions(role.permissions),
    member_count: memberCount,
    created_at: role.createdAt?.toISOString() ?? null,
    updated_at: role.updatedAt?.toISOString() ?? null,
  };
}
