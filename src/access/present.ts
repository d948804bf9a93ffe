import { iso } from '../core/present.ts';
import type { ResourceColumns } from './types.ts';

/** A resource's `resourceFields` (./schema.ts), as every presenter shows them. */
export const presentResourceFields = (row: ResourceColumns) => ({
  id: row.id,
  organization_id: row.organization_id,
  created_by_id: row.created_by_id,
  visibility: row.visibility,
  workspace_role: row.workspace_role,
});

/** A soft-deletable record's `lifecycleFields` (./schema.ts): timestamps as ISO 8601 strings. */
export const presentLifecycle = (row: Pick<ResourceColumns, 'deleted_at' | 'deleted_by_id' | 'created_at' | 'updated_at'>) => ({
  deleted_at: iso(row.deleted_at),
  deleted_by_id: row.deleted_by_id,
  created_at: row.created_at.toISOString(),
  updated_at: row.updated_at.toISOString(),
});
