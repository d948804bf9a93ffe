import type { z } from '../core/zod.ts';
import type { activityEventSchema } from './schema.ts';

export interface ActivityEventRow {
  id: string;
  action: string;
  actor_id: string | null;
  subject_type: string;
  subject_id: string | null;
  data: Record<string, unknown>;
  created_at: Date;
}

export const activityEventColumns = ['e.id', 'e.action', 'e.actor_id', 'e.subject_type', 'e.subject_id', 'e.data', 'e.created_at'];

export function presentActivityEvent(row: ActivityEventRow): z.input<typeof activityEventSchema> {
  return {
    id: row.id,
    action: row.action,
    actor_id: row.actor_id,
    subject_type: row.subject_type,
    subject_id: row.subject_id,
    data: row.data,
    created_at: row.created_at.toISOString(),
  };
}
