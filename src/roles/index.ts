/**
 * The roles domain's public module. Roles own organization_roles; what other domains may call is
 * the lookup of a custom role (./lookup.ts), which imports no other domain.
 */
export {
  type CustomRoleRow,
  customRoleColumns,
  customRoleJoinSql,
  customRolePermissions,
  customRolesOf,
  joinCustomRole,
  shareLockCustomRole,
} from './lookup.ts';
