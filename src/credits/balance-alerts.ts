// Low-balance alerts: thresholds on an organization's credit balance (its alert policy says which
// and whom to tell). Credits own them because credits know when the balance moves.
import { createHash, randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { recordActivity } from '../core/activity.ts';
import { recordEvent } from '../core/events.ts';
import { memberEmails } from '../members/index.ts';
import { type AlertThresholds, alertPolicyOf } from '../alert-policy/index.ts';
import type { Tx } from '../db/knex.ts';
import type { Deps } from '../platform/deps.ts';
import { balanceAlertCheckJob, balanceAlertEmailJob } from './jobs.ts';
import { creditsOf } from './service.ts';
import { inTransaction } from '../db/transaction.ts';
import { organizationName } from '../organizations/index.ts';

const BATCH = 500;

/**
 * Call after moving credits, in the same transaction: queues an alert check for the organization.
 * Checks are cheap and idempotent (the watermark), so a burst of movements may queue several.
 */
export async function enqueueBalanceAlertCheck(deps: Pick<Deps, 'jobs'>, trx: Tx, organizationId: string): Promise<void> {
  await deps.jobs.enqueue(trx, balanceAlertCheckJob, { organization_id: organizationId }, { organizationId });
}

/**
 * After available credits fell from `before` to `after` outside a transaction (a hold): queues a
 * check at once if that crossed one of the policy's thresholds or ran out; otherwise the minute's
 * sweep is soon enough and nothing is queued (a read of the policy instead of a job).
 */
export async function checkBalanceAlertsOnFall(
  deps: Pick<Deps, 'jobs' | 'db'>,
  organizationId: string,
  before: number,
  after: number,
  /** The policy's thresholds, when the statement that moved the credits read them too (else read here). */
  thresholds?: AlertThresholds,
): Promise<void> {
  if (!(before > 0 && after <= 0)) {
    const policy = thresholds ?? (await alertPolicyOf(deps.db, organizationId));
    if (!policy.enabled || !policy.lowBalanceThresholds.some((threshold) => before > threshold && after <= threshold)) return;
  }
  await inTransaction(deps.db, (trx) => enqueueBalanceAlertCheck(deps, trx, organizationId));
}

/**
 * Compares each organization's available credits with the balance seen at its previous check (the
 * watermark) and alerts once for every threshold crossed downward in between. The watermark row
 * is locked, so concurrent checks of one organization see each crossing once; rising back above a
 * threshold re-arms it.
 */
export async function checkBalanceAlerts(deps: Pick<Deps, 'db' | 'jobs'>, organizationId?: string): Promise<{ alerts: number }> {
  const candidates: string[] = organizationId
    ? [organizationId]
    : await deps
        .db('credit_balances as b')
        .leftJoin('credit_alert_watermarks as w', 'w.organization_id', 'b.organization_id')
        .where((query) => query.whereNull('w.organization_id').orWhereRaw('b.updated_at > w.checked_at'))
        .orderBy('b.updated_at')
        .limit(BATCH)
        .pluck('b.organization_id');
  let alerts = 0;
  for (const id of candidates) alerts += await checkOrganization(deps, id);
  return { alerts };
}

async function checkOrganization(deps: Pick<Deps, 'db' | 'jobs'>, organizationId: string): Promise<number> {
  return inTransaction(deps.db, async (trx) => {
    const balance = await trx('credit_balances').where({ organization_id: organizationId }).first('granted', 'captured', 'held', 'expired');
    if (!balance) return 0;
    const available = balance.granted - balance.captured - balance.held - balance.expired;
    // First sight: compare with everything ever granted, so earlier spending still counts as a fall.
    await trx.raw('INSERT INTO credit_alert_watermarks (organization_id, last_available) VALUES (?, ?) ON CONFLICT DO NOTHING', [
      organizationId,
      balance.granted,
    ]);
    const watermark = await trx('credit_alert_watermarks').where({ organization_id: organizationId }).forUpdate().first('last_available');
    const previous = Number(watermark.last_available);
    await trx('credit_alert_watermarks').where({ organization_id: organizationId }).update({ last_available: available, checked_at: trx.fn.now() });

    const policy = await alertPolicyOf(trx, organizationId);
    const organization = await organizationName(trx, organizationId, { live: true });
    if (organization === undefined) return 0;
    // Running out is an event whatever the alert policy says (the policy decides e-mails and thresholds).
    if (previous > 0 && available <= 0) await recordBalanceEvent(trx, 'credits.exhausted', organizationId, 0);
    if (!policy.enabled) return 0;
    const crossed = policy.lowBalanceThresholds.filter((threshold) => previous > threshold && available <= threshold);
    if (crossed.length === 0) return 0;
    const recipients = await recipientsOf(trx, organizationId, policy.notifyRoles, policy.extraRecipients);
    for (const threshold of crossed) {
      const crossing = randomUUID();
      await recordActivity(trx, {
        organizationId,
        actorId: null,
        action: 'credits.low_balance',
        subjectType: 'credits',
        subjectId: organizationId,
        data: { threshold, available, previous, recipients: recipients.length, crossing_id: crossing },
      });
      await recordBalanceEvent(trx, 'credits.low_balance', organizationId, threshold);
      for (const to of recipients) {
        await deps.jobs.enqueue(
          trx,
          balanceAlertEmailJob,
          {
            organization_id: organizationId,
            to,
            subject: `${organization}: credit balance at ${available} (alert threshold ${threshold})`,
            text: `The credit balance of ${organization} fell to ${available} credits, at or below your alert threshold of ${threshold}.\n\nBuy credits or change the plan to keep working without interruption.`,
            // The recipient by its hash: the key is shown to operators (job console), the address is not.
            idempotency_key: `balance-alert:${crossing}:${createHash('sha256').update(to).digest('hex')}`,
          },
          { organizationId },
        );
      }
    }
    return crossed.length;
  });
}

/** The organization's credits as GET /credits presents them, with the threshold crossed (0: exhausted). */
async function recordBalanceEvent(trx: Knex.Transaction, type: 'credits.low_balance' | 'credits.exhausted', organizationId: string, threshold: number) {
  await recordEvent(trx, { organizationId, type, subject: null, object: { ...(await creditsOf(trx, organizationId)), threshold } });
}

async function recipientsOf(trx: Knex.Transaction, organizationId: string, roles: string[], extra: string[]): Promise<string[]> {
  const members = roles.length ? await memberEmails(trx, organizationId, roles) : [];
  return [...new Set([...members, ...extra].map((email: string) => email.toLowerCase()))].sort();
}
