import type { z } from '../core/zod.ts';
import type { CreditCapture, CreditHold } from './hold-model.ts';
import type { CreditGrant } from './ledger.ts';
import type { captureSchema, grantSchema, holdSchema } from './schema.ts';
import { iso } from '../core/present.ts';

export const presentGrant = (grant: CreditGrant): z.input<typeof grantSchema> => ({
  id: grant.id,
  source: grant.source,
  amount: grant.amount,
  remaining: grant.remaining,
  priority: grant.priority,
  description: grant.description,
  expires_at: iso(grant.expiresAt),
  created_at: grant.createdAt.toISOString(),
});

export const presentHold = (hold: CreditHold): z.input<typeof holdSchema> => ({
  id: hold.id,
  run_id: hold.runId,
  status: hold.status,
  amount: hold.amount,
  captured: hold.captured,
  released: hold.released,
  remaining: hold.amount - hold.captured - hold.released,
  user_id: hold.userId,
  conversation_id: hold.conversationId,
  message_id: hold.messageId,
  expires_at: hold.expiresAt.toISOString(),
  resolved_at: iso(hold.resolvedAt),
  created_at: hold.createdAt.toISOString(),
});

export const presentCapture = (capture: CreditCapture): z.input<typeof captureSchema> => ({
  id: capture.id,
  capture_id: capture.captureKey,
  amount: capture.amount,
  tool_call_id: capture.toolCallId,
  description: capture.description,
  created_at: capture.createdAt.toISOString(),
});
