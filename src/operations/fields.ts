import { z } from '../core/zod.ts';

// The fields the console's requests share (./schema.ts, ./pause-schema.ts).

export const organizationId = z.string().min(1).max(64);
export const queueName = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[a-z0-9][a-z0-9._-]*$/, 'must be a queue name (lower case letters, digits, . _ -)');
export const reason = z.string().trim().min(1).max(500);
