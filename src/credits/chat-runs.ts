/**
 * Credits of a chat run over HTTP: begin reserves the estimated maximum, capture records what each
 * step used, settle closes the run (captures are final, the rest is released).
 */
import type { z } from '../core/zod.ts';
import type { Knex } from 'knex';
import { notFound } from '../core/errors.ts';
import { type IdempotentRequest, withIdempotency } from '../http/idempotency.ts';
import type { Actor } from '../access/index.ts';
import type { Membership } from '../members/index.ts';
import type { Deps } from '../platform/deps.ts';
import { enqueueBalanceAlertCheck } from './balance-alerts.ts';
import { holdColumns, type HoldRow } from './hold-model.ts';
import { captureFromHold, placeHoldOnce, settleHold } from './holds.ts';
import { presentCapture, presentHold } from './presenter.ts';
import type { beginRunBody, captureEnvelope, captureRunBody, holdEnvelope, settleRunBody } from './schema.ts';

const CHAT_RUN = 'chat_run';

export async function beginChatRun(
  deps: Deps,
  actor: Actor,
  organizationId: string,
  body: z.output<typeof beginRunBody>,
  idempotency: IdempotentRequest | undefined,
): Promise<z.input<typeof holdEnvelope>> {
  return withIdempotency(
    deps.db,
    idempotency,
    async (trx) => {
      const { hold } = await placeHoldOnce(trx, deps.creditPeriods, {
        organizationId,
        userId: actor.userId,
        amount: body.amount,
        reason: CHAT_RUN,
        runId: body.run_id,
        conversationId: body.conversation_id,
        messageId: body.message_id,
        expiresInSeconds: body.expires_in_seconds,
        description: 'Reserved for a chat run',
      });
      return { hold: presentHold(hold) };
    },
    201,
  );
}

export async function captureChatRun(
  deps: Deps,
  actor: Actor,
  organizationId: string,
  body: z.output<typeof captureRunBody>,
  idempotency: IdempotentRequest | undefined,
): Promise<z.input<typeof captureEnvelope>> {
  const membership = await actor.member(organizationId);
  return withIdempotency(deps.db, idempotency, async (trx) => {
    const run = await findRun(trx, membership, body.run_id);
    const { hold, capture } = await captureFromHold(trx, run.id, body.amount, {
      captureKey: body.capture_id ?? body.tool_call_id,
      toolCallId: body.tool_call_id,
      description: body.description,
      metadata: body.model === undefined ? undefined : { model: body.model },
    });
    // Spent credits may cross an alert threshold: check at once rather than at the next sweep.
    await enqueueBalanceAlertCheck(deps, trx, organizationId);
    return { hold: presentHold(hold), capture: presentCapture(capture) };
  });
}

export async function settleChatRun(
  deps: Deps,
  actor: Actor,
  organizationId: string,
  body: z.output<typeof settleRunBody>,
  idempotency: IdempotentRequest | undefined,
): Promise<z.input<typeof holdEnvelope>> {
  const membership = await actor.member(organizationId);
  return withIdempotency(deps.db, idempotency, async (trx) => {
    const run = await findRun(trx, membership, body.run_id);
    return { hold: presentHold((await settleHold(trx, run.id)).hold) };
  });
}

/** The run's own member, or anyone who manages credits, may capture and settle it; to others it does not exist. */
async function findRun(trx: Knex.Transaction, membership: Membership, runId: string): Promise<HoldRow> {
  const row = (await trx('credit_holds').where({ organization_id: membership.organizationId, run_id: runId, reason: CHAT_RUN }).first(holdColumns)) as
    | HoldRow
    | undefined;
  if (!row || (row.user_id !== membership.userId && !membership.permissions.has('credits.manage'))) throw notFound('chat run');
  return row;
}
