import { pageQuery, pageOf } from '../core/pagination.ts';
import { CHECKED_BY_SERVER, organizationIdParams, timestamp, userId, z } from '../core/zod.ts';
import { entryKinds } from './entries.ts';
import { grantSources } from './ledger.ts';

const credits = (description: string) => z.number().int().openapi({ description });
const runId = z.string().trim().min(1).max(200).openapi({ description: 'Your id for the chat run (unique per organization).', example: 'run_8e0f2b1c' });
const reference = z.string().trim().min(1).max(200);

export const memberParams = organizationIdParams.extend({ user_id: userId });

export const grantSchema = z
  .object({
    id: z.string().uuid(),
    source: z.enum(grantSources),
    amount: credits('Credits granted.'),
    remaining: credits('Credits of this grant neither reserved, spent nor expired.'),
    priority: z.number().int().openapi({ description: 'Among grants expiring together, lower is drawn first.' }),
    description: z.string(),
    expires_at: timestamp.nullable(),
    created_at: timestamp,
  })
  .openapi('CreditGrant');

export const creditsSchema = z
  .object({
    organization_id: z.string(),
    balance: credits('Credits the workspace has: available plus held.'),
    held: credits('Credits reserved by open holds (running chat runs, operations).'),
    available: credits('Credits that can be reserved now: balance minus held.'),
    grants: z
      .array(grantSchema)
      .openapi({ description: 'Unexpired grants, in the order they are drawn down (earliest expiry first, then priority, then creation).' }),
  })
  .openapi('Credits');

export const cycleSchema = z
  .object({
    organization_id: z.string(),
    period_start: timestamp,
    period_end: timestamp.openapi({ description: 'Exclusive.' }),
    granted: credits('Credits granted in this period (all sources).'),
    used: credits('Credits captured (spent) in this period.'),
    expired: credits('Credits that expired in this period.'),
    held: credits('Credits reserved right now.'),
    balance: credits('Current balance.'),
    available: credits('Current available credits.'),
  })
  .openapi('CreditCycle');

export const transactionSchema = z
  .object({
    id: z.string().uuid(),
    kind: z.enum(entryKinds),
    amount: credits('Credits moved (always positive).'),
    from_account: z.enum(['issued', 'available', 'held', 'spent', 'expired']),
    to_account: z.enum(['issued', 'available', 'held', 'spent', 'expired']),
    balance_change: credits('Effect on `balance`: positive for grants, negative for captures and expiry, 0 for holds and releases.'),
    available_change: credits('Effect on `available`.'),
    grant_id: z.string().uuid().nullable(),
    hold_id: z.string().uuid().nullable(),
    run_id: z.string().nullable(),
    user_id: z.string().nullable().openapi({ description: 'The member the movement is for.' }),
    conversation_id: z.string().nullable(),
    message_id: z.string().nullable(),
    tool_call_id: z.string().nullable(),
    description: z.string(),
    metadata: z.record(z.string(), z.unknown()),
    created_at: timestamp,
  })
  .openapi('CreditTransaction');

export const transactionsQuery = z.object({
  ...pageQuery,
  kind: z.enum(entryKinds).optional(),
  user_id: userId.optional().openapi({ description: 'Only movements of this member.' }),
  conversation_id: z.string().min(1).max(200).optional(),
  tool_call_id: z.string().min(1).max(200).optional(),
  run_id: z.string().min(1).max(200).optional(),
  since: timestamp.optional().openapi({ description: 'Inclusive lower bound on `created_at`.' }),
  until: timestamp.optional().openapi({ description: 'Exclusive upper bound on `created_at`.' }),
});

export const transactionsPage = pageOf(transactionSchema).openapi('CreditTransactionPage');

export const holdSchema = z
  .object({
    id: z.string().uuid(),
    run_id: z.string().nullable(),
    status: z.enum(['held', 'captured', 'released', 'expired']).openapi({
      description:
        '`held` until resolved once: `captured` (settled with usage), `released` (nothing used), `expired` (abandoned; captures kept, rest released).',
    }),
    amount: credits('Credits reserved at begin.'),
    captured: credits('Credits captured so far (final).'),
    released: credits('Credits given back.'),
    remaining: credits('Credits still capturable (0 once resolved).'),
    user_id: z.string().nullable(),
    conversation_id: z.string().nullable(),
    message_id: z.string().nullable(),
    expires_at: timestamp.openapi({ description: 'An unsettled run is expired by a job after this time.' }),
    resolved_at: timestamp.nullable(),
    created_at: timestamp,
  })
  .openapi('CreditHold');

export const captureSchema = z
  .object({
    id: z.string().uuid(),
    capture_id: z.string().nullable(),
    amount: credits('Credits captured by this call.'),
    tool_call_id: z.string().nullable(),
    description: z.string().nullable(),
    created_at: timestamp,
  })
  .openapi('CreditCapture');

export const holdEnvelope = z.object({ hold: holdSchema });
export const captureEnvelope = z.object({ hold: holdSchema, capture: captureSchema });

export const beginRunBody = z
  .object({
    run_id: runId,
    amount: z.number().int().min(1).max(1_000_000_000).openapi({ description: 'Estimated maximum credits of the run; reserved now.' }),
    conversation_id: reference.optional(),
    message_id: reference.optional(),
    expires_in_seconds: z
      .number()
      .int()
      .min(1)
      .max(24 * 3600)
      .optional()
      .openapi({ description: 'Expire the hold if not settled by then (default 900).' }),
  })
  .strict()
  .openapi('BeginChatRunCredits');

export const captureRunBody = z
  .object({
    run_id: runId,
    amount: z.number().int().min(0).max(1_000_000_000).openapi({ description: 'Credits used; all captures of a run together never exceed its hold.' }),
    capture_id: reference
      .optional()
      .openapi({ description: 'Replay key of this capture (defaults to `tool_call_id`): repeating it returns the first result.' }),
    tool_call_id: reference.optional(),
    description: z.string().trim().min(1).max(500).optional(),
    model: z.string().trim().min(1).max(100).optional().openapi({
      description: 'The model that used the credits; kept as `metadata.model` on the ledger rows, so `POST /reports/query` can group usage by `model`.',
      example: 'gpt-4o-mini',
    }),
  })
  .strict()
  .openapi('CaptureChatRunCredits');

export const settleRunBody = z.object({ run_id: runId }).strict().openapi('SettleChatRunCredits');

export const memberCreditsSchema = z
  .object({
    organization_id: z.string(),
    user_id: z.string(),
    spending_limit: credits('Credits the member may use per period; null means no limit.').nullable(),
    period_start: timestamp,
    period_end: timestamp,
    spent: credits('Credits the member captured this period.'),
    held: credits('Credits the member has reserved right now.'),
    remaining: credits('What the member may still reserve this period; null without a limit.').nullable(),
  })
  .openapi('MemberCredits');

export const updateMemberCreditsBody = z
  .object({ spending_limit: z.number().int().min(0).max(1_000_000_000).nullable().openapi({ description: 'null removes the limit.' }) })
  .strict()
  .openapi('UpdateMemberCredits');

export const adjustmentBody = z
  .object({
    amount: z
      .number()
      .int()
      .min(-1_000_000_000)
      .max(1_000_000_000)
      .refine((value) => value !== 0, { message: 'must not be 0' })
      .openapi({
        description:
          'Credits to add (positive: a grant of source `adjustment`) or take back (negative: drawn from grants in draw-down order; never more than `available`, else 400 naming it).',
        not: { const: 0 },
        [CHECKED_BY_SERVER]: true,
      }),
    reason: z
      .string()
      .trim()
      .min(1)
      .max(500)
      .regex(/\S/, 'must not be blank')
      .openapi({ description: 'Why the balance is corrected; kept on the ledger rows and the activity entry.' }),
    user_id: userId.optional().openapi({
      description: 'The member the correction is for (default: the actor); must be a member (400 naming it otherwise).',
      [CHECKED_BY_SERVER]: true,
    }),
  })
  .strict()
  .openapi('CreditAdjustment');

export const adjustmentEnvelope = z
  .object({
    transactions: z
      .array(transactionSchema)
      .openapi({ description: 'The ledger rows the adjustment wrote (one for a positive adjustment, one per grant drawn from for a negative one).' }),
    credits: creditsSchema,
  })
  .openapi('CreditAdjustmentResult');
