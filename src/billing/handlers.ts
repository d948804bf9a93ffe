// Worker side of the billing jobs (loaded by the `handler` of each job in ./jobs.ts).
import type { JobContext } from '../jobs/define.ts';
import { checkBalanceAlerts } from './alerts.ts';
import { runCycleRefills } from './cycle.ts';
import type { BalanceAlertEmailPayload, OrganizationScope } from './jobs.ts';

/** Grants each organization its plan credits once per period (the refill row's key guards retries). */
export async function cycleRefills({ organization_id }: OrganizationScope, { deps, log }: JobContext): Promise<void> {
  const { periods } = await runCycleRefills(deps, { organizationId: organization_id });
  log.info({ periods }, 'plan-cycle refills');
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
