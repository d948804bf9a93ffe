import { pageOf, pageQuery } from '../core/pagination.ts';
import { singleLine, timestamp, z } from '../core/zod.ts';
import { organizationPermissions, roleKey } from '../members/index.ts';

export const MAX_CUSTOM_ROLES = 50;

export const permissionSchema = z
  .enum(organizationPermissions, { error: `unknown permission; known permissions: ${organizationPermissions.join(', ')}` })
  .openapi('OrganizationPermission');

export const roleSchema = z
  .object({
    key: z.string().openapi({ description: 'Identifies the role in member and invitation `role` fields.' }),
    name: z.string(),
    description: z.string().nullable(),
    built_in: z.boolean().openapi({ description: '`owner`, `admin` and `member` are built in and cannot be changed or deleted.' }),
    permissions: z.array(permissionSchema),
    member_count: z.number().int().min(0).openapi({ description: 'Members holding the role now.' }),
    created_at: timestamp.nullable().openapi({ description: 'null for built-in roles.' }),
    updated_at: timestamp.nullable().openapi({ description: 'null for built-in roles.' }),
  })
  .openapi('Role');

export const roleEnvelope = z.object({ role: roleSchema });
export const rolePage = pageOf(roleSchema).openapi('RolePage');

export const listRolesQuery = z.object({ ...pageQuery });

export const saveRoleBody = z
  .object({
    key: roleKey,
    name: singleLine(80),
    description: z.string().trim().max(500).nullable().optional().openapi({ description: 'Omitted keeps the current description; null clears it.' }),
    permissions: z
      .array(permissionSchema)
      .max(organizationPermissions.length * 2)
      .openapi({ description: 'The whole permission list of the role (replaces the current one). Duplicates are ignored.' }),
  })
  .strict()
  .openapi('SaveRole');

export const deleteRoleQuery = z.object({ key: roleKey.openapi({ description: 'Key of the custom role to delete.' }) });
