import { presentLifecycle, presentResourceFields, resourceColumnNames, type ResourceColumns } from '../access/index.ts';

/** A canvas as stored. */
export interface CanvasRow extends ResourceColumns {
  title: string | null;
  project_id: string | null;
}

export const canvasColumns = [...resourceColumnNames, 'title', 'project_id'] as const;

export function presentCanvas(row: CanvasRow) {
  return {
    ...presentResourceFields(row),
    title: row.title,
    project_id: row.project_id,
    ...presentLifecycle(row),
  };
}
