import { z } from '../core/zod.ts';

// The fields the console's requests share (./schema.ts, ./pause-schema.ts).

export const organizationId = z.string().min(1).max(64);
export const queueName = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[a-z0-9][a-z0-9._-]*$/, 'must be a queue name (lower case letters, digits, . _ -)');
export const reason = z.string().trim().min(1).max(500).regex(/\S/, 'must not be blank');
/** `cron:<queue>` or `task:<scheduled task id>`; the id in the hyphenated form PostgreSQL's uuid takes, so no malformed id reaches a cast. */
export const scheduleKey = z
  .string()
  .min(1)
  .max(250)
  .regex(/^(cron:[a-z0-9][a-z0-9._-]*|task:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/, 'must be cron:<queue> or task:<scheduled task id>');
