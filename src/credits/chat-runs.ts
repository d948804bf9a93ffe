/**
 * Credits of a chat run over HTTP: begin reserves the estimated maximum, capture records what each
 * step used, settle closes the run (captures are final, the rest is released).
 */
import type { z } from '../core/zod.ts';
import type { Knex } from 'knex';
import { AppError, isAppError } from '../core/errors.ts';
import { type IdempotentRequest, withIdempotency } from '../platform/idempotency.ts';
import type { Actor } from '../access/index.ts';
import type { Membership } from '../members/index.ts';
import type { Deps } from '../platform/deps.ts';
import { checkBalanceAlertsOnFall } from './balance-alerts.ts';
import { placeHoldOnce, type ReserveAnswer, type ReserveStatement } from './holds.ts';
import { captureFromHold, type HoldRef, settleHold } from './hold-resolutions.ts';
import { type AlertThresholds, alertThresholdsColumn, alertThresholdsOf } from '../alert-policy/index.ts';
import { presentCapture, presentHold } from './presenter.ts';
import type { beginRunBody, captureEnvelope, captureRunBody, holdEnvelope, settleRunBody } from './schema.ts';

const CHAT_RUN = 'chat_run';

export async function beginChatRun(
  deps: Pick<Deps, 'creditPeriods' | 'db' | 'jobs'>,
  actor: Actor,
  organizationId: string,
  body: z.output<typeof beginRunBody>,
  idempotency: IdempotentRequest | undefined,
): Promise<z.input<typeof holdEnvelope>> {
  await requireAttribution(deps, actor, organizationId, body);
  let available: number | undefined;
  let thresholds: AlertThresholds | undefined;
  // The hold and the organization's alert thresholds (what the fall is checked against) in one statement.
  const reserveReadingThresholds: ReserveStatement = async (db, args) => {
    const { rows } = await db.raw('SELECT r.*, ? FROM credit_reserve(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) r', [
      alertThresholdsColumn(db, organizationId),
      ...args,
    ]);
    thresholds = alertThresholdsOf(rows[0].alert_thresholds);
    return rows[0] as ReserveAnswer;
  };
  const begin = async (db: Knex) => {
    const placed = await placeHoldOnce(
      db,
      deps.creditPeriods,
      {
        organizationId,
        userId: actor.userId,
        amount: body.amount,
        reason: CHAT_RUN,
        runId: body.run_id,
        conversationId: body.conversation_id,
        messageId: body.message_id,
        expiresInSeconds: body.expires_in_seconds,
        description: 'Reserved for a chat run',
      },
      reserveReadingThresholds,
    );
    available = placed.available;
    return { hold: presentHold(placed.hold) };
  };
  // Without an Idempotency-Key the hold is the whole unit of work: one autocommitted statement, so the
  // organization's balance row is locked for that statement only, not across a COMMIT round trip.
  const answer = idempotency === undefined ? await begin(deps.db) : await withIdempotency(deps.db, idempotency, begin, 201);
  // The hold is where available credits fall (a capture only moves them from held to spent). After
  // the commit; a crash in between leaves the check to the minute's sweep.
  if (available !== undefined) await checkBalanceAlertsOnFall(deps, organizationId, available + body.amount, available, thresholds);
  return answer;
}

export async function captureChatRun(
  deps: Pick<Deps, 'db'>,
  actor: Actor,
  organizationId: string,
  body: z.output<typeof captureRunBody>,
  idempotency: IdempotentRequest | undefined,
): Promise<z.input<typeof captureEnvelope>> {
  const membership = await actor.member(organizationId);
  const capture = async (db: Knex) => {
    const { hold, capture } = await captureFromHold(db, runHold(membership, body.run_id), body.amount, {
      captureKey: body.capture_id ?? body.tool_call_id,
      toolCallId: body.tool_call_id,
      description: body.description,
      metadata: body.model === undefined ? undefined : { model: body.model },
    });
    return { hold: presentHold(hold), capture: presentCapture(capture) };
  };
  // Nothing needs to commit with the capture: it runs autocommitted, one statement, so the
  // organization's balance row is locked for that statement only, not across a COMMIT round trip.
  // It leaves available credits as they were (held → spent), so no alert can be crossed here.
  if (idempotency === undefined) return capture(deps.db);
  return withIdempotency(deps.db, idempotency, capture);
}

export async function settleChatRun(
  deps: Pick<Deps, 'db'>,
  actor: Actor,
  organizationId: string,
  body: z.output<typeof settleRunBody>,
  idempotency: IdempotentRequest | undefined,
): Promise<z.input<typeof holdEnvelope>> {
  const membership = await actor.member(organizationId);
  return withIdempotency(deps.db, idempotency, async (trx) => ({ hold: presentHold((await settleHold(trx, runHold(membership, body.run_id))).hold) }));
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** 404 naming the field: the same answer whether the conversation or message is missing, unreadable or elsewhere. */
const unknownReference = (field: 'conversation_id' | 'message_id') => {
  const message = `${field}: no ${field === 'conversation_id' ? 'conversation' : 'message'} you can read in this organization${field === 'message_id' ? ' and conversation' : ''}`;
  return new AppError('not_found', message, [{ path: [field], message }]);
};

/**
 * Costs are attributed (ledger rows, a message's credits) only to a conversation the caller can
 * read in this organization, and to a message of it; a message alone stands for its conversation.
 * Messages are read straight from their table: credits cannot import conversations (which reach
 * credits through metering).
 */
async function requireAttribution(deps: Pick<Deps, 'db'>, actor: Actor, organizationId: string, body: z.output<typeof beginRunBody>): Promise<void> {
  let conversationId = body.conversation_id;
  if (body.message_id !== undefined) {
    const message = UUID.test(body.message_id)
      ? ((await deps.db('conversation_messages').where({ id: body.message_id }).first('conversation_id')) as { conversation_id: string } | undefined)
      : undefined;
    if (!message || (conversationId !== undefined && message.conversation_id !== conversationId)) throw unknownReference('message_id');
    conversationId = message.conversation_id;
  }
  if (conversationId === undefined) return;
  const field = body.conversation_id === undefined ? 'message_id' : 'conversation_id';
  if (!UUID.test(conversationId)) throw unknownReference(field);
  const { row } = await actor.resource(deps.db, 'chat_conversation', conversationId, 'read').catch((error: unknown) => {
    throw isAppError(error, 'not_found') ? unknownReference(field) : error;
  });
  if (row.organization_id !== organizationId || row.deleted_at !== null) throw unknownReference(field);
}

/**
 * The run's own member, or anyone who manages credits, may capture and settle it; to others it does
 * not exist. Found by the statement that captures or settles it (no round trip of its own).
 */
const runHold = (membership: Membership, runId: string): HoldRef => ({
  organizationId: membership.organizationId,
  runId,
  reason: CHAT_RUN,
  userId: membership.permissions.has('credits.manage') ? null : membership.userId,
  what: 'chat run',
});
