// Pauses in the job console's contract: what a pause is (as operators and as an organization see
// it) and the requests that set, list and lift one.
import { pageOf, pageQuery } from '../core/pagination.ts';
import { CHECKED_BY_SERVER, queryBoolean, timestamp, uuid, z } from '../core/zod.ts';
import { organizationId, queueName, reason, scheduleKey } from './fields.ts';

const pauseFields = {
  id: uuid,
  scope: z
    .enum(['queue', 'organization', 'schedule'])
    .describe('`queue`: the whole queue, every organization (service-wide); `organization`: one organization on a queue; `schedule`: a cron schedule'),
  queue: z.string().nullable(),
  organization_id: z.string().nullable(),
  schedule: z.string().nullable(),
  set_by: z
    .enum(['operator', 'organization'])
    .describe('`operator`: an operator of the service set it (every queue and platform-schedule pause); `organization`: the organization’s owners or admins'),
  expires_at: timestamp.nullable(),
  created_at: timestamp.describe('Paused since'),
  resumed_at: timestamp.nullable(),
  open: z.boolean().describe('In force now (not resumed, not expired)'),
  can_resume: z.boolean().describe('The caller may end it: operators any pause; an organization’s owners and admins only one their organization set'),
};

/** The operators' view: who and why, always. */
export const pauseSchema = z
  .object({
    ...pauseFields,
    reason: z.string(),
    created_by: z.string().describe('The user who set it'),
    resumed_by: z.string().nullable().describe('The user who ended it, or `expiry`'),
  })
  .openapi('Pause', { description: 'A pause as operators of the service see it.' });

/** An organization's view: that its work is paused and since when; who and why only for pauses it set itself. */
export const organizationPauseSchema = z
  .object({
    ...pauseFields,
    reason: z
      .string()
      .nullable()
      .describe('The reason given, for a pause the organization set; null when `set_by` is `operator` (operators’ reasons are internal)'),
    created_by: z.string().nullable().describe('The member who set it; null when `set_by` is `operator`'),
    resumed_by: z.string().nullable().describe('The member who ended it, or `expiry`; null while open or when an operator ended it'),
  })
  .openapi('OrganizationPause', {
    description:
      'A pause as an organization’s owners and admins see it: what is paused, since when and until when. Who set or ended it and why are shown only for what the organization did itself.',
  });

/** What a console caller gets: operators `Pause`, an organization's owners and admins `OrganizationPause`. */
export const pauseView = z.union([pauseSchema, organizationPauseSchema]);

export const createPauseBody = z
  .object({
    scope: z.enum(['queue', 'organization', 'schedule']),
    queue: queueName
      .optional()
      .describe('Required for `queue` and `organization`: a queue workers run (400 naming it otherwise)')
      .openapi({ [CHECKED_BY_SERVER]: true }),
    organization_id: organizationId.optional().describe('Required for `organization`'),
    schedule: scheduleKey
      .optional()
      .describe('Required for `schedule`: `cron:<queue>` or `task:<scheduled task id>` of an existing schedule (400 naming it otherwise)')
      .openapi({ [CHECKED_BY_SERVER]: true }),
    reason,
    expires_at: timestamp.optional().describe('When the pause ends by itself; none: until resumed'),
  })
  .strict()
  // What each scope names, as the service checks it.
  .openapi({
    oneOf: [
      { properties: { scope: { const: 'queue' } }, required: ['queue'], not: { anyOf: [{ required: ['organization_id'] }, { required: ['schedule'] }] } },
      { properties: { scope: { const: 'organization' } }, required: ['queue', 'organization_id'], not: { required: ['schedule'] } },
      { properties: { scope: { const: 'schedule' } }, required: ['schedule'], not: { required: ['queue'] } },
    ],
  });
export const pauseIdParams = z.object({ pause_id: uuid }).strict();
export const listPausesQuery = z
  .object({
    organization_id: organizationId.optional(),
    open: queryBoolean.default(true).openapi({ description: '`true`: pauses in force; `false`: all, newest first.' }),
    ...pageQuery,
  })
  .strict();
export const pausePage = pageOf(pauseView).openapi('PausePage');
export const pauseCreated = z.object({ pause: pauseView, deferred: z.number().int().describe('Queued jobs pushed back') }).openapi('PauseCreated');
export const pauseResumed = z.object({ pause: pauseView, restored: z.number().int().describe('Deferred jobs made due again') }).openapi('PauseResumed');
