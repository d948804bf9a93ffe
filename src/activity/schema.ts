import { pageOf, pageQuery } from '../core/pagination.ts';
import { jsonValue, timestamp, z } from '../core/zod.ts';

export const activityEventSchema = z
  .object({
    id: z.string().uuid(),
    action: z.string().openapi({ description: 'What happened, e.g. `member.role_changed`.', example: 'member.role_changed' }),
    actor_id: z.string().nullable().openapi({ description: 'User who made the change; null for changes made by the service itself.' }),
    subject_type: z.string().openapi({ example: 'member' }),
    subject_id: z.string().nullable(),
    data: z.record(z.string(), jsonValue).openapi({ description: 'Details of the change; depends on the action.' }),
    created_at: timestamp,
  })
  .openapi('ActivityEvent');

export const activityPage = pageOf(activityEventSchema).openapi('ActivityPage');

export const activityQuery = z.object({
  ...pageQuery,
  action: z.string().min(1).max(100).optional().openapi({ description: 'Only events with this exact action.' }),
  actor_id: z.string().min(1).max(64).optional().openapi({ description: 'Only events made by this user.' }),
  subject_type: z.string().min(1).max(64).optional().openapi({ description: 'Only events about this kind of subject (`organization`, `member`, `role`…).' }),
  since: timestamp.optional().openapi({ description: 'Only events at or after this instant.' }),
});
