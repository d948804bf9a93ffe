/** Vocabulary of resource access (spec 2.1, 2.7). The resource types themselves are declared by their domains (./registry.ts). */
export type { ResourceType } from './registry.ts';

export const roles = ['viewer', 'editor', 'owner'] as const;
export type Role = (typeof roles)[number];
export type GrantRole = 'viewer' | 'editor';

/** What a caller may do with a resource; the policy maps roles to these. */
export const capabilities = ['read', 'edit', 'manage_people', 'change_general_access', 'delete', 'restore', 'archive'] as const;
export type Capability = (typeof capabilities)[number];

/** Roles are ordered; SQL computes ranks (0 = no access) and JS turns them back into roles. */
export const roleRank: Record<Role, number> = { viewer: 1, editor: 2, owner: 3 };
export const roleOfRank = (rank: number): Role | null => (rank >= 3 ? 'owner' : rank === 2 ? 'editor' : rank === 1 ? 'viewer' : null);
export const maxRole = (...candidates: (Role | null | undefined)[]): Role | null => roleOfRank(Math.max(0, ...candidates.map((r) => (r ? roleRank[r] : 0))));

/** The columns every resource table has (the registry's contract, see ./registry.ts). */
export interface ResourceRow {
  id: string;
  organization_id: string;
  created_by_id: string | null;
  visibility: 'private' | 'workspace' | 'public';
  workspace_role: 'viewer' | 'editor' | 'owner';
  deleted_at: Date | null;
  deleted_by_id: string | null;
  [column: string]: unknown;
}

/** The columns every resource table has, as a type's row reads them: its row interface extends this (src/canvases/presenter.ts). */
export interface ResourceColumns {
  id: string;
  organization_id: string;
  created_by_id: string;
  visibility: 'private' | 'workspace' | 'public';
  workspace_role: 'viewer' | 'editor' | 'owner';
  deleted_at: Date | null;
  deleted_by_id: string | null;
  created_at: Date;
  updated_at: Date;
}

/** The columns of ResourceColumns, which a type's column list starts with (`[...resourceColumnNames, 'title', …]`). */
export const resourceColumnNames = [
  'id',
  'organization_id',
  'created_by_id',
  'visibility',
  'workspace_role',
  'deleted_at',
  'deleted_by_id',
  'created_at',
  'updated_at',
] as const;

/** Who is asking, resolved against the organization the resource lives in. */
export interface Viewer {
  userId: string;
  organizationId: string;
  /** Organization owners/admins (permission `resources.administer`) act as owners of every resource. */
  administers: boolean;
}
