import { iso } from '../core/present.ts';

/** A canvas as stored. */
export interface CanvasRow {
  id: string;
  organization_id: string;
  created_by_id: string;
  title: string | null;
  visibility: 'private' | 'workspace' | 'public';
  workspace_role: 'viewer' | 'editor' | 'owner';
  project_id: string | null;
  deleted_at: Date | null;
  deleted_by_id: string | null;
  created_at: Date;
  updated_at: Date;
}

export const canvasColumns = [
  'id',
  'organization_id',
  'created_by_id',
  'title',
  'visibility',
  'workspace_role',
  'project_id',
  'deleted_at',
  'deleted_by_id',
  'created_at',
  'updated_at',
] as const;

export function presentCanvas(row: CanvasRow) {
  return {
    id: row.id,
    organization_id: row.organization_id,
    created_by_id: row.created_by_id,
    title: row.title,
    visibility: row.visibility,
    workspace_role: row.workspace_role,
    project_id: row.project_id,
    deleted_at: iso(row.deleted_at),
    deleted_by_id: row.deleted_by_id,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}
