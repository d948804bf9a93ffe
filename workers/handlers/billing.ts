import { handle } from '../handler.ts';
import { checkBalanceAlerts } from '../../src/billing/alerts.ts';
import { runCycleRefills } from '../../src/billing/cycle.ts';
import { balanceAlertCheckJob, balanceAlertEmailJob, cycleRefillsJob } from '../../src/billing/jobs.ts';

/** Grants each organization its plan credits once per period (the refill row's key guards retries). */
export const cycleRefillsHandler = handle(cycleRefillsJob, async ({ organization_id }, { deps, log }) => {
  const { periods } = await runCycleRefills(deps, { organizationId: organization_id });
  log.info({ periods }, 'plan-cycle refills');
});

/** Alerts on thresholds crossed since the last check (the locked watermark makes each crossing count once). */
export const balanceAlertCheckHandler = handle(balanceAlertCheckJob, async ({ organization_id }, { deps, log }) => {
  const { alerts } = await checkBalanceAlerts(deps, organization_id);
  if (alerts) log.info({ alerts, organization_id }, 'low-balance alerts raised');
});

/** The provider dedupes on the crossing's key, so a retried attempt sends nothing twice. */
export const balanceAlertEmailHandler = handle(balanceAlertEmailJob, async (payload, { deps }) => {
  await deps.providers.email.send({ to: payload.to, subject: payload.subject, text: payload.text, idempotencyKey: payload.idempotency_key });
});
