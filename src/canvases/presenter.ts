import { presentLifecycle, presentResourceFields, type ResourceColumns } from '../access/index.ts';

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
    ...presentResourceFields(row),
    title: row.title,
    project_id: row.project_id,
    ...presentLifecycle(row),
  };
}
