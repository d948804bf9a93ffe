import type { EventType } from '../core/events.ts';
import type { z } from '../core/zod.ts';
import type { eventSchema } from './schema.ts';

export interface EventRow {
  id: string;
  type: EventType;
  organization_id: string;
  created_at: Date;
  data: { object: Record<string, unknown> };
}

export const eventColumns = ['e.id', 'e.type', 'e.organization_id', 'e.created_at', 'e.data'];

export function presentEvent(row: EventRow): z.input<typeof eventSchema> {
  return { id: row.id, type: row.type, organization_id: row.organization_id, created_at: row.created_at.toISOString(), data: row.data };
}
