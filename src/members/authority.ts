import { forbidden } from '../core/errors.ts';
import type { Membership } from './membership.ts';
import { orderedPermissions, type OrganizationPermission } from './permissions.ts';

/**
 * Nobody hands out (or takes away) more power than they hold: the `owner` role is the owners'
 * alone, and any other role may be granted, revoked or edited only by a member whose own role
 * carries every permission of it. This is what keeps `members.manage` from being an escalation.
 */
export function requireAuthorityOver(actor: Membership, role: { key: string; permissions: ReadonlySet<OrganizationPermission> }, doing: string): void {
  if (role.key === 'owner' && actor.role !== 'owner') throw forbidden(`only owners may ${doing} the owner role`);
  const missing = orderedPermissions(role.permissions).filter((permission) => !actor.permissions.has(permission));
  if (missing.length > 0)
    throw forbidden(`you cannot ${doing} the role "${role.key}": it carries ${missing.join(', ')}, which your role "${actor.role}" lacks`);
}

/** For role definitions: every permission put into a role must be one the editor holds. */
export function requireHeldPermissions(actor: Membership, permissions: Iterable<OrganizationPermission>, field: string): void {
  const missing = orderedPermissions(permissions).filter((permission) => !actor.permissions.has(permission));
  if (missing.length > 0) throw forbidden(`${field}: you cannot put ${missing.join(', ')} into a role; your role "${actor.role}" lacks it`);
}
