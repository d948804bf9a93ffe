import type { Knex } from 'knex';
import { forbidden, notFound } from '../core/errors.ts';
import { queryPrepared } from '../db/prepared.ts';
import { recordMemberEvent } from './events.ts';
import { builtInRolePermissions, isBuiltInRole, type OrganizationPermission } from './permissions.ts';

/**
 * The one reader of `organization_members` outside the members domain's own writes: every
 * authorization decision about an organization starts here (through the Actor in src/access).
 */
export interface Membership {
  organizationId: string;
  userId: string;
  role: string;
  permissions: ReadonlySet<OrganizationPermission>;
  /** The live organization itself, read in the same round trip (absent when read with a resource). */
  organization?: OrganizationRow;
}

/** An organization as stored (the organizations domain presents it). */
export interface OrganizationRow {
  id: string;
  name: string;
  slug: string;
  logo_key: string | null;
  logo_updated_at: Date | null;
  onboarded_at: Date | null;
  created_by_id: string;
  created_at: Date;
  updated_at: Date;
}

export const organizationColumns = ['id', 'name', 'slug', 'logo_key', 'logo_updated_at', 'onboarded_at', 'created_by_id', 'created_at', 'updated_at'] as const;

/** One permission, or any of several (`['credits.view', 'billing.view']`). */
export type PermissionNeed = OrganizationPermission | readonly OrganizationPermission[];

/** 403 naming what is missing when the membership's role holds none of `need`. */
export function requirePermission(membership: Membership, need: PermissionNeed | undefined): Membership {
  const holds =
    need === undefined || (typeof need === 'string' ? membership.permissions.has(need) : need.some((permission) => membership.permissions.has(permission)));
  if (!holds) throw forbidden(`your role "${membership.role}" lacks the permission ${typeof need === 'string' ? need : need!.join(' or ')}`);
  return membership;
}

/**
 * The user's current membership, locked (lockMembership), 404 for a non-member and 403 lacking
 * `need`: for changes that must decide on the role as it is now.
 */
export async function requireCurrentMembership(trx: Knex.Transaction, organizationId: string, userId: string, need?: PermissionNeed): Promise<Membership> {
  const membership = await lockMembership(trx, organizationId, userId);
  if (!membership) throw notFound('organization');
  return requirePermission(membership, need);
}

/** Permissions of a role: the fixed matrix for built-in roles, the stored list for custom ones. */
export function permissionsOfRole(role: string, customPermissions: readonly string[] | null | undefined): ReadonlySet<OrganizationPermission> {
  if (isBuiltInRole(role)) return builtInRolePermissions[role];
  return new Set((customPermissions ?? []) as OrganizationPermission[]);
}

/**
 * SQL joining a member row `m` of a live organization with its custom role `r` (if any). Used
 * alone for a membership and inside the one-round-trip resource read (src/access/actor.ts).
 */
export const memberJoinSql = (organizationColumn: string, userBinding = '?') =>
  `JOIN organizations mo ON mo.id = ${organizationColumn} AND mo.deleted_at IS NULL
   JOIN organization_members m ON m.organization_id = mo.id AND m.user_id = ${userBinding}
   LEFT JOIN organization_roles mr ON mr.organization_id = m.organization_id AND mr.key = m.role`;

/** SQL boolean: the joined member's role holds `permission` (built-in matrix or custom list). */
export function roleHoldsSql(permission: OrganizationPermission): string {
  const builtIn = Object.entries(builtInRolePermissions)
    .filter(([, permissions]) => permissions.has(permission))
    .map(([role]) => `'${role}'`);
  return `(m.role IN (${builtIn.join(', ') || 'NULL'}) OR '${permission}' = ANY(mr.permissions))`;
}

// Membership, custom role and organization in one statement: the hottest read of the API.
const membershipSql = `SELECT m.role, mr.permissions AS custom_permissions, ${organizationColumns.map((c) => `mo.${c}`).join(', ')}
  FROM (SELECT $1::text AS organization_id) q ${memberJoinSql('q.organization_id', '$2')}`;

// Inside a transaction (not prepared: its connection is the transaction's own).
const membershipInTransactionSql = membershipSql.replace('$1', '?').replace('$2', '?');

type MembershipRow = OrganizationRow & { role: string; custom_permissions: string[] | null };

/**
 * The user's membership of a live organization, with the organization, or null (not a member,
 * deleted, or no such organization). Outside a transaction it runs as a prepared statement. It
 * takes no lock: a change deciding on the role uses lockMembership.
 */
export async function findMembership(db: Knex, organizationId: string, userId: string): Promise<Membership | null> {
  if (db.isTransaction) return membershipOf(organizationId, userId, (await db.raw(membershipInTransactionSql, [organizationId, userId])).rows[0]);
  const [row] = await queryPrepared<MembershipRow>(db, 'find-membership', membershipSql, [organizationId, userId]);
  return membershipOf(organizationId, userId, row);
}

/**
 * The one membership read for a change that decides on the caller's role (invitations, roles,
 * members, organization settings; the Actor's `{ fresh: trx }`): the member row is share-locked
 * until `trx` ends, then read. A role change or removal locks that row for update (./changes.ts),
 * so it either committed first and is seen here, or waits until `trx` ends: the decision and the
 * change it allows see the same role. `lockOrganization` also locks the organization row, for an
 * update of it.
 */
export async function lockMembership(
  trx: Knex.Transaction,
  organizationId: string,
  userId: string,
  options: { lockOrganization?: boolean } = {},
): Promise<Membership | null> {
  // Lock, then read in a second statement: its snapshot is taken with the lock held, so it sees a
  // committed role change together with that role's permissions (a locking read that waited
  // re-checks only the locked row, not the custom role it joined).
  if (!(await trx('organization_members').where({ organization_id: organizationId, user_id: userId }).forShare().first('role'))) return null;
  const sql = membershipInTransactionSql + (options.lockOrganization ? ' FOR UPDATE OF mo' : '');
  return membershipOf(organizationId, userId, (await trx.raw(sql, [organizationId, userId])).rows[0]);
}

function membershipOf(organizationId: string, userId: string, row: MembershipRow | undefined): Membership | null {
  if (!row) return null;
  const { role, custom_permissions, ...organization } = row;
  return { organizationId, userId, role, permissions: permissionsOfRole(role, custom_permissions), organization };
}

/** Permissions of a member's role, e.g. of the target of a role change (read inside its transaction). */
export async function rolePermissions(db: Knex, organizationId: string, role: string): Promise<ReadonlySet<OrganizationPermission>> {
  if (isBuiltInRole(role)) return builtInRolePermissions[role];
  const custom = await db('organization_roles').where({ organization_id: organizationId, key: role }).first('permissions');
  return permissionsOfRole(role, custom?.permissions as string[] | undefined);
}

/**
 * Whether `userId` is a member, taking a share lock on the member row so a concurrent removal
 * waits for the caller's transaction (e.g. a grant being given to that member).
 */
export async function lockMemberForShare(trx: Knex.Transaction, organizationId: string, userId: string): Promise<boolean> {
  return Boolean(await trx('organization_members').where({ organization_id: organizationId, user_id: userId }).forShare().first('user_id'));
}

export async function isMember(db: Knex, organizationId: string, userId: string): Promise<boolean> {
  return Boolean(await db('organization_members').where({ organization_id: organizationId, user_id: userId }).first('user_id'));
}

/** Adds a member (organization creation, an accepted invitation). */
export async function addMembership(trx: Knex.Transaction, organizationId: string, userId: string, role: string): Promise<void> {
  await trx('organization_members').insert({ organization_id: organizationId, user_id: userId, role });
  await recordMemberEvent(trx, 'member.added', organizationId, userId);
}

/** Memberships `m` of the user in live organizations `o`, to select from and page. */
export function membershipsOfUser(db: Knex, userId: string): Knex.QueryBuilder {
  return db('organization_members as m').join('organizations as o', 'o.id', 'm.organization_id').whereNull('o.deleted_at').where('m.user_id', userId);
}

/** As membershipsOfUser, with each membership's custom role `mr` (null for a built-in role), for `roleHoldsSql` and `mr.permissions`. */
export function membershipsWithRolesOfUser(db: Knex, userId: string): Knex.QueryBuilder {
  return membershipsOfUser(db, userId).leftJoin('organization_roles as mr', (on) => on.on('mr.organization_id', 'm.organization_id').andOn('mr.key', 'm.role'));
}

/** Whether the user holds `permission` in at least one live organization (e.g. sees what every organization's admins see). */
export async function holdsPermissionAnywhere(db: Knex, userId: string, permission: OrganizationPermission): Promise<boolean> {
  const row = await membershipsWithRolesOfUser(db, userId).whereRaw(roleHoldsSql(permission)).first('m.organization_id');
  return row !== undefined;
}

/** Whether a member of the organization has this e-mail address (lower case). */
export async function hasMemberWithEmail(db: Knex, organizationId: string, email: string): Promise<boolean> {
  return Boolean(
    await db('organization_members as m')
      .join('users as u', 'u.id', 'm.user_id')
      .where('m.organization_id', organizationId)
      .whereRaw('lower(u.email) = ?', [email])
      .first('m.user_id'),
  );
}

/** E-mail addresses of the members holding one of `roles` (alerts go to them). */
export async function memberEmails(trx: Knex, organizationId: string, roles: readonly string[]): Promise<string[]> {
  return trx('organization_members as m')
    .join('users as u', 'u.id', 'm.user_id')
    .where('m.organization_id', organizationId)
    .whereIn('m.role', roles)
    .whereNotNull('u.email')
    .pluck('u.email');
}

/** How many members the organization has. */
export async function countMembers(db: Knex, organizationId: string): Promise<number> {
  const [row] = await db('organization_members').where({ organization_id: organizationId }).count<{ count: string }[]>('* as count');
  return Number(row?.count ?? 0);
}

/** How many members hold each role. */
export async function memberCountsByRole(db: Knex, organizationId: string): Promise<Map<string, number>> {
  const rows = (await db('organization_members')
    .where({ organization_id: organizationId })
    .groupBy('role')
    .select('role', db.raw('count(*)::int as count'))) as { role: string; count: number }[];
  return new Map(rows.map((row) => [row.role, row.count]));
}

/** Which of `userIds` are members of the organization, with their e-mail and name (scheduled tasks' recipients). */
export async function membersAmong(
  db: Knex,
  organizationId: string,
  userIds: readonly string[],
): Promise<{ user_id: string; email: string | null; name: string | null }[]> {
  if (userIds.length === 0) return [];
  return db('organization_members as m')
    .join('users as u', 'u.id', 'm.user_id')
    .where('m.organization_id', organizationId)
    .whereIn('m.user_id', userIds)
    .select('m.user_id', 'u.email', 'u.name');
}
