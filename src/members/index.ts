// The members domain's public module: memberships (the one reader of organization_members), the
// permission vocabulary and the role catalog they are assigned from. Other domains import from here.
export { requireAuthorityOver, requireHeldPermissions } from './authority.ts';
export {
  addMembership,
  countMembers,
  findMembership,
  hasMemberWithEmail,
  holdsPermissionAnywhere,
  isMember,
  lockMemberForShare,
  lockMembership,
  memberEmails,
  membersAmong,
  memberJoinSql,
  membershipsOfUser,
  membershipsWithRolesOfUser,
  organizationColumns,
  permissionsOfRole,
  requirePermission,
  roleHoldsSql,
  rolePermissions,
  type Membership,
  type OrganizationRow,
  type PermissionNeed,
} from './membership.ts';
export {
  builtInRolePermissions,
  builtInRoles,
  isBuiltInRole,
  orderedPermissions,
  organizationPermissions,
  type BuiltInRole,
  type OrganizationPermission,
  type Role,
} from './permissions.ts';
export {
  builtInRoleList,
  countCustomRoles,
  deleteCustomRole,
  lockAssignableRole,
  lockCustomRole,
  memberCounts,
  roleColumns,
  roleFromRow,
  rolesOf,
  saveCustomRole,
} from './role-catalog.ts';
export { memberSchema, roleKey } from './schema.ts';
