import { recordActivity } from '../core/activity.ts';
import { conflict, notFound } from '../core/errors.ts';
import { decodeCursor, encodeCursor, type Page } from '../core/pagination.ts';
import type { Actor } from '../access/index.ts';
import { builtInRoles, isBuiltInRole, type BuiltInRole, type OrganizationPermission } from '../members/index.ts';
import type { Deps } from '../platform/deps.ts';
import {
  countCustomRoles,
  deleteCustomRole,
  lockCustomRole,
  memberCounts,
  orderedPermissions,
  requireAuthorityOver,
  requireHeldPermissions,
  roleFromRow,
  rolesOf,
  saveCustomRole,
  type Role,
} from '../members/index.ts';
import { MAX_CUSTOM_ROLES } from './schema.ts';
import { inTransaction } from '../db/transaction.ts';
import { lockOrganization } from '../organizations/index.ts';

export interface CountedRole {
  role: Role;
  memberCount: number;
}

/**
 * Roles in a fixed order (built-in, then custom by key). An organization has at most
 * MAX_CUSTOM_ROLES + 3 roles, so the page is cut in memory; the cursor is the last key seen.
 */
export async function listRoles(deps: Deps, organizationId: string, page: { limit: number; cursor?: string | undefined }): Promise<Page<CountedRole>> {
  const [roles, counts] = await Promise.all([rolesOf(deps.db, organizationId), memberCounts(deps.db, organizationId)]);
  // Position = (rank, key): built-ins by their fixed rank 0–2, custom roles share rank 3 and sort by key.
  const position = (role: Role): [number, string] => [role.builtIn ? builtInRoles.indexOf(role.key as BuiltInRole) : builtInRoles.length, role.key];
  const after = page.cursor === undefined ? undefined : decodeCursor(page.cursor, 2);
  const isAfter = (role: Role) => {
    const [rank, key] = position(role);
    return rank > Number(after![0]) || (rank === Number(after![0]) && key > String(after![1]));
  };
  const rest = after === undefined ? roles : roles.filter(isAfter);
  const items = rest.slice(0, page.limit);
  const next_cursor = rest.length > page.limit ? encodeCursor(position(items.at(-1)!)) : null;
  return { items: items.map((role) => ({ role, memberCount: counts.get(role.key) ?? 0 })), next_cursor };
}

export interface SaveRoleInput {
  key: string;
  name: string;
  description?: string | null | undefined;
  permissions: OrganizationPermission[];
}

/** Creates the custom role `key`, or replaces its name, description and permissions. */
export async function saveRole(
  deps: Deps,
  actor: Actor,
  organizationId: string,
  input: SaveRoleInput,
): Promise<{ role: Role; memberCount: number; created: boolean }> {
  return inTransaction(deps.db, async (trx) => {
    const membership = await actor.member(organizationId, 'roles.manage', { fresh: trx });
    if (isBuiltInRole(input.key)) throw conflict(`key: "${input.key}" is a built-in role and cannot be changed`, ['key']);
    const permissions = orderedPermissions(input.permissions);
    requireHeldPermissions(membership, permissions, 'permissions');
    const existingRow = await lockCustomRole(trx, organizationId, input.key);
    const existing = existingRow ? roleFromRow(existingRow) : null;
    if (existing) {
      requireAuthorityOver(membership, existing, 'change');
    } else {
      // Serialises role creation per organization so the limit holds under concurrent creates.
      await lockOrganization(trx, organizationId);
      if ((await countCustomRoles(trx, organizationId)) >= MAX_CUSTOM_ROLES)
        throw conflict(`key: the organization already has the maximum of ${MAX_CUSTOM_ROLES} custom roles`, ['key']);
    }
    const values = {
      name: input.name,
      description: input.description === undefined ? (existing?.description ?? null) : input.description,
      permissions,
    };
    const role = roleFromRow(await saveCustomRole(trx, organizationId, input.key, values, existing !== null));
    await recordActivity(trx, {
      organizationId,
      actorId: actor.userId,
      action: existing ? 'role.updated' : 'role.created',
      subjectType: 'role',
      subjectId: input.key,
      data: {
        ...(existing && { before: { name: existing.name, description: existing.description, permissions: orderedPermissions(existing.permissions) } }),
        after: values,
      },
    });
    const memberCount = (await memberCounts(trx, organizationId)).get(input.key) ?? 0;
    return { role, memberCount, created: !existing };
  });
}

/** Deletes a custom role nobody holds any more. */
export async function deleteRole(deps: Deps, actor: Actor, organizationId: string, key: string): Promise<void> {
  await inTransaction(deps.db, async (trx) => {
    // Like defining one: decided on the caller's role as it is now (a demotion in flight is waited for).
    const manager = await actor.member(organizationId, 'roles.manage', { fresh: trx });
    if (isBuiltInRole(key)) throw conflict(`key: "${key}" is a built-in role and cannot be deleted`, ['key']);
    // The lock makes a concurrent assignment (which share-locks the role) finish first, so it is counted.
    const row = await lockCustomRole(trx, organizationId, key);
    if (!row) throw notFound('role');
    // Deleting needs the authority changing needs: otherwise a manager could delete (and re-create) a role above their own.
    requireAuthorityOver(manager, roleFromRow(row), 'delete');
    const holders = (await memberCounts(trx, organizationId)).get(key) ?? 0;
    if (holders > 0) throw conflict(`key: role "${key}" is still held by ${holders} member${holders === 1 ? '' : 's'}; give them another role first`, ['key']);
    await deleteCustomRole(trx, organizationId, key);
    await recordActivity(trx, {
      organizationId,
      actorId: actor.userId,
      action: 'role.deleted',
      subjectType: 'role',
      subjectId: key,
      data: { name: row.name, permissions: row.permissions },
    });
  });
}
