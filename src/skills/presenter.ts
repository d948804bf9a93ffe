import { presentLifecycle } from '../access/index.ts';
import type { z } from '../core/zod.ts';
import type { organizationSkillSchema, skillSchema, skillVersionSchema } from './schema.ts';
import { iso } from '../core/present.ts';

export interface SkillRow {
  id: string;
  codename: string | null;
  organization_id: string | null;
  source: 'built-in' | 'custom' | 'community';
  name: string;
  description: string;
  body: string;
  files: unknown;
  author: string | null;
  project_id: string | null;
  project_scoped: boolean;
  visibility: 'private' | 'workspace' | 'public';
  workspace_role: 'viewer' | 'editor' | 'owner';
  created_by_id: string | null;
  mod_shortcut_id: string | null;
  listing_id: string | null;
  listing_version: number | null;
  listing_edited_at: Date | null;
  current_version: number;
  deleted_at: Date | null;
  deleted_by_id: string | null;
  created_at: Date;
  updated_at: Date;
}

export interface SkillVersionRow {
  id: string;
  skill_id: string;
  version: number;
  name: string;
  description: string;
  body: string;
  files: unknown;
  restored_from_version: number | null;
  created_by_id: string | null;
  created_at: Date;
}

/** The columns of spec 2.5, in order: what presentSkill needs (current_version and project_id stay inside). */
export const skillColumns = [
  'id',
  'codename',
  'organization_id',
  'source',
  'name',
  'description',
  'body',
  'files',
  'author',
  'project_scoped',
  'visibility',
  'workspace_role',
  'created_by_id',
  'mod_shortcut_id',
  'listing_id',
  'listing_version',
  'listing_edited_at',
  'deleted_at',
  'deleted_by_id',
  'created_at',
  'updated_at',
] as const;

export function presentSkill(row: SkillRow): z.input<typeof skillSchema> {
  return {
    id: row.id,
    codename: row.codename,
    organization_id: row.organization_id,
    source: row.source,
    name: row.name,
    description: row.description,
    body: row.body,
    files: row.files ?? null,
    author: row.author,
    project_scoped: row.project_scoped,
    visibility: row.visibility,
    workspace_role: row.workspace_role,
    created_by_id: row.created_by_id,
    mod_shortcut_id: row.mod_shortcut_id,
    listing_id: row.listing_id,
    listing_version: row.listing_version,
    listing_edited_at: iso(row.listing_edited_at),
    ...presentLifecycle(row),
  };
}

/** The organization-scoped shape of spec 2.5 (POST /organizations/{organization_id}/skills). */
export function presentOrganizationSkill(row: SkillRow): z.input<typeof organizationSkillSchema> {
  const full = presentSkill(row);
  return {
    id: full.id,
    organization_id: full.organization_id,
    source: full.source,
    name: full.name,
    description: full.description,
    body: full.body,
    files: full.files,
    author: full.author,
    project_scoped: full.project_scoped,
    created_by_id: full.created_by_id,
    mod_shortcut_id: full.mod_shortcut_id,
    deleted_at: full.deleted_at,
    deleted_by_id: full.deleted_by_id,
    created_at: full.created_at,
    updated_at: full.updated_at,
  };
}

export function presentSkillVersion(row: SkillVersionRow, currentVersion: number): z.input<typeof skillVersionSchema> {
  return {
    id: row.id,
    skill_id: row.skill_id,
    version: row.version,
    name: row.name,
    description: row.description,
    body: row.body,
    files: row.files ?? null,
    restored_from_version: row.restored_from_version,
    current: row.version === currentVersion,
    created_by_id: row.created_by_id,
    created_at: row.created_at.toISOString(),
  };
}
