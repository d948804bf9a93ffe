import type { z } from '../core/zod.ts';
import { orderedPermissions, type Role } from '../members/index.ts';
import type { roleSchema } from './schema.ts';

export type { Role };

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
