import { CHECKED_BY_SERVER, emailAddress, timestamp, z } from '../core/zod.ts';
import { roleKey } from '../members/index.ts';

export const MAX_THRESHOLDS = 10;
export const MAX_EXTRA_RECIPIENTS = 20;

const thresholds = z
  .array(z.number().int().min(0).max(1_000_000_000))
  .max(MAX_THRESHOLDS)
  .refine((list) => list.every((value, i) => i === 0 || value < list[i - 1]!), 'must be distinct and in descending order')
  .openapi({
    description: `Credit balances that trigger an alert when the balance falls to or below them; distinct, descending, at most ${MAX_THRESHOLDS}. JSON Schema cannot declare the order (only \`uniqueItems\`): a list out of order is 400 naming the field.`,
    uniqueItems: true,
    example: [500, 100, 0],
  });

const notifyRoles = z
  .array(roleKey)
  .max(20)
  .refine((list) => new Set(list).size === list.length, 'must not repeat a role')
  .openapi({
    description: 'Roles (built-in or custom) whose members receive the alerts, each once; a role the organization does not have is 400 naming it.',
    uniqueItems: true,
    example: ['owner', 'admin'],
  });

const extraRecipients = z
  .array(
    emailAddress()
      .max(254)
      .transform((email) => email.toLowerCase()),
  )
  .max(MAX_EXTRA_RECIPIENTS)
  .refine((list) => new Set(list).size === list.length, 'must not repeat an address')
  .openapi({ description: `Further e-mail addresses to alert, at most ${MAX_EXTRA_RECIPIENTS}.` });

export const alertPolicySchema = z
  .object({
    enabled: z.boolean(),
    low_balance_thresholds: z.array(z.number().int()),
    notify_roles: z.array(z.string()),
    extra_recipients: z.array(z.string()),
    updated_at: timestamp.nullable().openapi({ description: 'null while the organization still has the default policy.' }),
    updated_by_id: z.string().nullable(),
  })
  .openapi('AlertPolicy', { description: 'Credit-balance alerts of an organization.' });

export const alertPolicyEnvelope = z.object({ alert_policy: alertPolicySchema });

export const updateAlertPolicyBody = z
  .object({
    enabled: z.boolean().optional(),
    low_balance_thresholds: thresholds.optional().openapi({ [CHECKED_BY_SERVER]: true }),
    notify_roles: notifyRoles.optional().openapi({ [CHECKED_BY_SERVER]: true }),
    extra_recipients: extraRecipients.optional(),
  })
  .strict()
  .refine((body) => Object.keys(body).length > 0, 'send at least one of enabled, low_balance_thresholds, notify_roles, extra_recipients')
  .openapi({ minProperties: 1 })
  .openapi('UpdateAlertPolicy', { description: 'Fields sent replace the current values; fields omitted keep them.' });
