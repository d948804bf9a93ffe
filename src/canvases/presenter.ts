import type { ResourceColumns } from '../access/index.ts';
import { iso } from '../core/present.ts';

/** A canvas as stored. */
export interface CanvasRow extends ResourceColumns {
  title: string | null;
  project_id: string | null;
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
