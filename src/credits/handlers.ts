// Worker side of the credit jobs (loaded by the `handler` of each job in ./jobs.ts).
import type { JobContext } from '../jobs/define.ts';
import { expireDueGrants, expireDueHolds } from './expiry.ts';
import { checkBalanceAlerts } from './balance-alerts.ts';
import type { BalanceAlertEmailPayload, OrganizationScope } from './jobs.ts';

export async function expireCreditHolds(_payload: unknown, { deps, log }: JobContext): Promise<void> {
  const expired = await expireDueHolds(deps.db);
  if (expired) log.info({ expired }, 'credit holds expired');
}

export async function expireCreditGrants(_payload: unknown, { deps, log }: JobContext): Promise<void> {
  const expired = await expireDueGrants(deps.db);
  if (expired) log.info({ expired }, 'credit grants expired');
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
