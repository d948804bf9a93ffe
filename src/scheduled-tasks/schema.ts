import { lifecycleFields, resourceFields, writableVisibilitySchema, writableWorkspaceRoleSchema } from '../access/index.ts';
import { pageOf, pageQuery } from '../core/pagination.ts';
import { CHECKED_BY_SERVER, queryBoolean, singleLine, TIME_ZONES, timestamp, userId, uuid, z } from '../core/zod.ts';

const schedule = z
  .object({
    cron: z
      .string()
      .max(200)
      .describe(
        'Five fields: minute hour day-of-month month day-of-week (e.g. "0 9 * * 1-5"), or a nickname such as @daily; a field out of range is 400 naming it',
      )
      // Five white-space-separated fields or an @nickname; each field's range is the scheduler's to check.
      .openapi({ pattern: '^\\s*(?:@\\S+|\\S+(?:\\s+\\S+){4})\\s*$', [CHECKED_BY_SERVER]: true }),
    timezone: z
      .string()
      .max(64)
      .describe('IANA timezone the cron is read in (e.g. "Europe/Berlin"); daylight-saving changes are followed')
      .openapi({ enum: [...TIME_ZONES] }),
  })
  .strict();

const recipients = z
  .array(userId)
  .max(50)
  .describe(
    'Members of the organization who can read the task (user ids), who get each run’s answer by e-mail; a member removed from the organization leaves the list',
  );

const fields = {
  title: singleLine(300),
  prompt: z.string().min(1).max(20_000),
  schedule,
  model: singleLine(64)
    .nullable()
    .optional()
    .describe('A chat model available to the organization; default: its first available one')
    .openapi({ [CHECKED_BY_SERVER]: true }),
  skill_id: uuid
    .nullable()
    .optional()
    .describe('A skill the caller can read, given to the model with the prompt')
    .openapi({ [CHECKED_BY_SERVER]: true }),
  email_recipients: recipients.optional().openapi({ [CHECKED_BY_SERVER]: true }),
  max_credits_per_run: z
    .number()
    .int()
    .min(1)
    .max(1_000_000)
    .nullable()
    .optional()
    .describe('Each run holds this many credits (1–1,000,000; null: the default hold of its turn). Raising it needs the task’s owner or an admin'),
  enabled: z.boolean().optional(),
};

export const createScheduledTaskBody = z
  .object({
    organization_id: z.string().min(1).max(64),
    ...fields,
    project_id: uuid
      .nullable()
      .optional()
      .describe('A project the caller can edit: its audience may read the task')
      .openapi({ [CHECKED_BY_SERVER]: true }),
    visibility: writableVisibilitySchema.optional(),
    workspace_role: writableWorkspaceRoleSchema.optional(),
  })
  .strict();

export const updateScheduledTaskBody = z
  .object({
    title: fields.title.optional(),
    prompt: fields.prompt.optional(),
    schedule: schedule.optional(),
    model: fields.model,
    skill_id: fields.skill_id,
    email_recipients: fields.email_recipients,
    max_credits_per_run: fields.max_credits_per_run,
    enabled: fields.enabled,
  })
  .strict()
  .refine((body) => Object.keys(body).length > 0, 'send at least one field')
  // `{}` is refused, and the document says so.
  .openapi({ minProperties: 1 });

export const scheduledTaskIdParams = z.object({ scheduled_task_id: uuid });

export const listScheduledTasksQuery = z.object({
  organization_id: z.string().min(1).max(64),
  deleted: queryBoolean.optional(),
  search: z.string().trim().min(1).max(200).optional().describe('Case-insensitive substring of the title'),
  created_by: userId.optional(),
  ...pageQuery,
});

export const scheduledTaskSchema = z.object({
  ...resourceFields,
  title: z.string(),
  prompt: z.string(),
  schedule: z.object({ cron: z.string(), timezone: z.string() }),
  model: z.string().nullable(),
  skill_id: uuid.nullable(),
  project_id: uuid.nullable(),
  email_recipients: z.array(z.string()),
  max_credits_per_run: z.number().int().nullable(),
  enabled: z.boolean(),
  next_run_at: timestamp.nullable().describe('The next slot; null while disabled or deleted'),
  upcoming_runs: z
    .array(z.object({ at: z.string().describe('In the task’s timezone, with its offset'), utc: timestamp }))
    .describe('The next five runs (empty while disabled or deleted)'),
  ...lifecycleFields,
});
export const scheduledTaskPage = pageOf(scheduledTaskSchema);
/** One scheduled task as create, get, update and restore answer it: wrapped in one field (CONVENTIONS §4), as organizations are. */
export const scheduledTaskEnvelope = z.object({ scheduled_task: scheduledTaskSchema });
export const emailRecipientsSchema = z.object({
  items: z.array(z.object({ user_id: z.string(), email: z.string().nullable(), name: z.string().nullable() })),
});

export const oneOffRunBody = z
  .object({
    prompt: z.string().min(1).max(20_000).optional(),
    model: singleLine(64)
      .nullable()
      .optional()
      .openapi({ [CHECKED_BY_SERVER]: true }),
    email_recipients: recipients.optional().openapi({ [CHECKED_BY_SERVER]: true }),
  })
  .strict();

export const listRunsQuery = z.object({
  organization_id: z.string().min(1).max(64),
  task_id: uuid.optional(),
  status: z.enum(['queued', 'running', 'succeeded', 'failed', 'canceled', 'skipped']).optional(),
  from: z.string().datetime({ offset: true }).optional().describe('Only runs scheduled at or after this instant'),
  to: z.string().datetime({ offset: true }).optional().describe('Only runs scheduled before this instant'),
  ...pageQuery,
});

export const runSchema = z.object({
  id: uuid,
  task_id: uuid,
  organization_id: z.string(),
  trigger: z.enum(['schedule', 'manual', 'one_off']),
  scheduled_for: timestamp,
  missed_slots: z.number().int().describe('Slots missed while no dispatcher ran, folded into this run'),
  status: z.enum(['queued', 'running', 'succeeded', 'failed', 'canceled', 'skipped']),
  prompt: z.string(),
  model: z.string().nullable(),
  email_recipients: z.array(z.string()),
  max_credits: z.number().int().nullable(),
  requested_by_id: z.string().nullable(),
  conversation_id: uuid.nullable().describe('The conversation the run answered in (schedule_id = the task)'),
  credits_used: z.number().int().nullable(),
  error: z.object({ code: z.string(), message: z.string() }).nullable(),
  created_at: timestamp,
  started_at: timestamp.nullable(),
  finished_at: timestamp.nullable(),
});
export const runEnvelope = z.object({ run: runSchema });
export const runPage = pageOf(runSchema);
