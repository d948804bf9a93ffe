/**
 * What an organization role may do. Built-in roles are fixed; custom roles (roles endpoints)
 * choose from the same list. Resource-level access (viewer/editor/owner on an asset, a chat…)
 * is a separate matter, decided by the access module.
 */
export const organizationPermissions = [
  'organization.update', // name, slug, logo, onboarding
  'organization.delete',
  'members.view',
  'members.manage', // change roles, remove members
  'invitations.manage',
  'roles.manage',
  'alert_policy.manage',
  'activity.view',
  'billing.view',
  'billing.manage',
  'credits.view',
  'credits.manage', // spending limits, adjustments
  'resources.create', // assets, chats, canvases, projects, skills
  'resources.administer', // act as owner on every resource of the organization
  'connectors.manage', // create, change and delete the organization's connectors
  'chat_models.manage', // the organization's copy of a chat model: enable, name, parameters, prices
  'jobs.manage', // the job console for the organization's own jobs: inspect, retry, cancel, pause
  'skill_listings.publish', // put the organization's skills into the global skill catalog (with edit rights on the skill)
  'webhooks.manage', // the organization's webhook endpoints: create, change, rotate secrets, see and redeliver deliveries
] as const;

export type OrganizationPermission = (typeof organizationPermissions)[number];

export const builtInRoles = ['owner', 'admin', 'member'] as const;
export type BuiltInRole = (typeof builtInRoles)[number];

const all = new Set<OrganizationPermission>(organizationPermissions);

/** The documented permission matrix of the built-in roles. */
export const builtInRolePermissions: Record<BuiltInRole, ReadonlySet<OrganizationPermission>> = {
  owner: all,
  // Admins run the organization but cannot delete it or manage its money. Members publish nothing
  // to the global catalog: what leaves the organization is the owners' and admins' decision (or a custom role's).
  admin: new Set(organizationPermissions.filter((p) => p !== 'organization.delete' && p !== 'billing.manage')),
  member: new Set<OrganizationPermission>(['members.view', 'activity.view', 'credits.view', 'resources.create']),
};

/** Permissions in the order of the documented matrix, so lists compare and diff cleanly. */
export const orderedPermissions = (permissions: Iterable<OrganizationPermission>): OrganizationPermission[] => {
  const held = new Set(permissions);
  return organizationPermissions.filter((permission) => held.has(permission));
};

/** A role of an organization: built-in (fixed matrix) or custom (defined through the roles endpoints). */
export interface Role {
  key: string;
  name: string;
  description: string | null;
  builtIn: boolean;
  permissions: ReadonlySet<OrganizationPermission>;
  createdAt: Date | null;
  updatedAt: Date | null;
}

export const isBuiltInRole = (role: string): role is BuiltInRole => (builtInRoles as readonly string[]).includes(role);
