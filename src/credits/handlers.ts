// Worker side of the credit jobs (loaded by the `handler` of each job in ./jobs.ts).
import { isAppError } from '../core/errors.ts';
import type { JobContext } from '../jobs/define.ts';
import { expireDueGrants, expireDueHolds } from './expiry.ts';
import { captureHold, placeHoldOnce } from './holds.ts';
import { checkBalanceAlerts } from './balance-alerts.ts';
import type { BalanceAlertEmailPayload, MeteredOperationPayload, OrganizationScope } from './jobs.ts';

export async function expireCreditHolds(_payload: unknown, { deps, log }: JobContext): Promise<void> {
  const expired = await expireDueHolds(deps.db);
  if (expired) log.info({ expired }, 'credit holds expired');
}

export async function expireCreditGrants(_payload: unknown, { deps, log }: JobContext): Promise<void> {
  const expired = await expireDueGrants(deps.db);
  if (expired) log.info({ expired }, 'credit grants expired');
}

/** Reserve → perform → capture; each step is its own transaction and safe to repeat (see the job). */
export async function runMeteredOperation(payload: MeteredOperationPayload, { deps, log, signal }: JobContext): Promise<void> {
  const perform = deps.metered.get(payload.operation);
  if (!perform) throw new Error(`no metered operation named ${payload.operation}`);
  let hold: Awaited<ReturnType<typeof placeHoldOnce>>['hold'];
  try {
    ({ hold } = await deps.db.transaction((trx) =>
      placeHoldOnce(trx, deps.creditPeriods, {
        organizationId: payload.organization_id,
        userId: payload.user_id,
        amount: payload.estimate,
        reason: payload.operation,
        runId: `job:${payload.operation_key}`,
        conversationId: payload.conversation_id,
        toolCallId: payload.tool_call_id,
        expiresInSeconds: payload.hold_seconds,
      }),
    ));
  } catch (error) {
    // No credits: the operation is not done, and retrying will not change that.
    if (isAppError(error, 'payment_required')) return log.warn({ reason: error.message }, 'metered operation refused: no credits');
    throw error;
  }
  // A previous attempt already finished (captured) or gave up (expired): nothing more to do.
  if (hold.status !== 'held') return log.info({ hold_id: hold.id, status: hold.status }, 'metered operation already resolved');
  const used = await perform(payload.input, { deps, signal });
  // Never charge more than was reserved.
  const amount = Math.min(Math.max(0, Math.floor(used)), hold.amount);
  try {
    await deps.db.transaction((trx) => captureHold(trx, hold.id, amount, { description: `Used by ${payload.operation}` }));
  } catch (error) {
    // The hold expired while we worked: the expiry released it, and it stays released.
    if (isAppError(error, 'conflict')) return log.warn({ hold_id: hold.id, reason: error.message }, 'metered operation finished after its hold was resolved');
    throw error;
  }
}

/** Alerts on thresholds crossed since the last check (the locked watermark makes each crossing count once). */
export async function balanceAlertCheck({ organization_id }: OrganizationScope, { deps, log }: JobContext): Promise<void> {
  const { alerts } = await checkBalanceAlerts(deps, organization_id);
  if (alerts) log.info({ alerts, organization_id }, 'low-balance alerts raised');
}

/** The provider dedupes on the crossing's key, so a retried attempt sends nothing twice. */
export async function balanceAlertEmail(payload: BalanceAlertEmailPayload, { deps }: JobContext): Promise<void> {
  await deps.providers.email.send({ to: payload.to, subject: payload.subject, text: payload.text, idempotencyKey: payload.idempotency_key });
}
