import { CHECKED_BY_SERVER, timestamp, z } from '../core/zod.ts';
import { usageGroupings } from './usage.ts';

const MAX_RANGE_DAYS = 366;
const DAY = 86_400_000;

// A plain date means the whole UTC day: `from` at its start, `to` at its end (both inclusive).
const dateOnly = /^\d{4}-\d{2}-\d{2}$/;
const instant = z
  .string()
  .refine(
    (value) => (dateOnly.test(value) || z.iso.datetime({ offset: true }).safeParse(value).success) && !Number.isNaN(Date.parse(value)),
    'must be a date (YYYY-MM-DD) or an ISO 8601 date-time',
  )
  .openapi({
    example: '2026-01-31',
    // What the check above accepts: a plain date, or a date-time with Z or an offset (zod's ISO rule), that is a real instant.
    pattern: '^\\d{4}-\\d{2}-\\d{2}(?:T\\d{2}:\\d{2}(?::\\d{2}(?:\\.\\d+)?)?(?:Z|[+-]\\d{2}:\\d{2}))?$',
    description: 'A date (YYYY-MM-DD) or an ISO 8601 date-time with `Z` or an offset; an impossible date (2026-02-30) is 400 naming the field.',
    [CHECKED_BY_SERVER]: true,
  } as Record<string, unknown>);

export const usageQueryBody = z
  .object({
    organization_id: z.string().min(1).max(255),
    from: instant.openapi({ description: 'Start (inclusive). A date means 00:00 UTC of that day.' }),
    to: instant.openapi({ description: 'End. A date includes that whole day (UTC); a date-time is exclusive.' }),
    group_by: z.enum(usageGroupings),
    kinds: z.array(z.string().min(1).max(64)).min(1).max(20).optional().openapi({
      description:
        'Only usage of these kinds (what the credits paid for: `chat_run`, a metered read’s operation such as `net2_profile` or `search`, `generation`…).',
    }),
  })
  .strict()
  .transform((body, ctx) => {
    const from = new Date(body.from);
    const to = dateOnly.test(body.to) ? new Date(Date.parse(body.to) + DAY) : new Date(body.to);
    if (to <= from) ctx.addIssue({ code: 'custom', path: ['to'], message: 'must be after from' });
    else if (to.getTime() - from.getTime() > MAX_RANGE_DAYS * DAY)
      ctx.addIssue({ code: 'custom', path: ['to'], message: `the range from → to may span at most ${MAX_RANGE_DAYS} days` });
    return { ...body, fromDate: from, toDate: to };
  });

export const usageReportSchema = z
  .object({
    report: z.object({
      organization_id: z.string(),
      from: timestamp,
      to: timestamp.openapi({ description: 'Exclusive end of the range.' }),
      group_by: z.enum(usageGroupings),
      kinds: z.array(z.string()).nullable(),
      total_credits: z.number().int(),
      rows: z.array(
        z.object({
          key: z.string().openapi({
            description:
              'The day (YYYY-MM-DD, UTC), user id, kind (what the credits paid for: a metered read’s operation, `chat_run`…), model, conversation id or tool call id (`unattributed` when the usage names none).',
          }),
          label: z.string().nullable().openapi({ description: "The member's name or e-mail for `member`; null otherwise." }),
          credits: z.number().int().openapi({ description: 'Credits spent (captured).' }),
          captures: z.number().int().openapi({ description: 'Number of captures summed.' }),
        }),
      ),
    }),
  })
  .openapi('UsageReport');

export const inventoryBody = z.object({ organization_id: z.string().min(1).max(255) }).strict();

export const inventorySchema = z
  .object({
    inventory: z.object({
      organization_id: z.string(),
      generated_at: timestamp,
      totals: z.record(z.string(), z.number().int()).openapi({ description: 'Count per resource type, all states.' }),
      items: z.array(
        z.object({
          type: z.string().openapi({ description: '`member`, `invitation`, `project`, `asset`, `canvas`, `chat_conversation`, `skill`.' }),
          state: z.string().openapi({ description: '`active`, `archived`, `deleted`; for invitations their status.' }),
          project_id: z.string().nullable(),
          count: z.number().int(),
        }),
      ),
    }),
  })
  .openapi('InventoryReport');

const perWindow = <T extends z.ZodType>(schema: T) => z.object({ last_7_days: schema, last_30_days: schema });

export const balanceReportSchema = z
  .object({
    report: z.object({
      organization_id: z.string(),
      balance: z.number().int().openapi({ description: 'Credits not spent or expired (held included).' }),
      held: z.number().int(),
      available: z.number().int().openapi({ description: 'balance − held: what can still be reserved.' }),
      burn_rate: perWindow(z.number()).openapi({ description: 'Credits spent per day, averaged over the window.' }),
      spent: perWindow(z.number().int()),
      runway_days: perWindow(z.number().nullable()).openapi({ description: 'available ÷ burn rate; null when nothing was spent in the window.' }),
      as_of: timestamp,
    }),
  })
  .openapi('BalanceReport');
