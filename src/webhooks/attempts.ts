import type { Knex } from 'knex';
import { memberEmails } from '../members/index.ts';
import { organizationName } from '../organizations/index.ts';
import type { Deps } from '../platform/deps.ts';
import { webhookEndpointDisabledEmailJob } from './jobs.ts';

/** An endpoint whose deliveries have failed, without a success in between, for this long is disabled. */
export const DISABLE_AFTER_HOURS = 72;

/** What one POST came to. */
export interface Outcome {
  status: number | null;
  body: string | null;
  latencyMs: number;
  error: { code: string; message: string } | null;
}

/** One attempt to record: its outcome, and the endpoint slot it held while it sent (released with the record). */
export interface SentAttempt extends Outcome {
  deliveryId: string;
  endpointId: string;
  organizationId: string;
  url: string;
  started: Date;
  jobId: string;
  slot: number;
  holder: string;
}

export const answeredOk = (outcome: Outcome) => outcome.status !== null && outcome.status >= 200 && outcome.status <= 299;

/**
 * Records an attempt on the delivery and its endpoint, and frees the slot it held, in ONE statement
 * (a delivery's hot path: its first step, this record and the job's completion are all it writes):
 * the delivery locked, the attempt inserted, the delivery's last answer set — a 2xx settles it and
 * clears the endpoint's failure record, anything else marks the endpoint failing since now (unless
 * it already was). An endpoint failing for DISABLE_AFTER_HOURS is then disabled, its owners and
 * admins told. 'settled': the delivery is gone (its endpoint was deleted).
 */
export async function recordAttempt(
  trx: Knex.Transaction,
  deps: Pick<Deps, 'jobs'>,
  attempt: SentAttempt,
): Promise<'succeeded' | 'failed' | 'disabled' | 'settled'> {
  const ok = answeredOk(attempt);
  const reason = attempt.error ? `${attempt.error.code}: ${attempt.error.message}` : `the endpoint answered ${attempt.status}`;
  const { rows } = await trx.raw(
    `WITH d AS (
       SELECT id, attempts + 1 AS attempt FROM webhook_deliveries WHERE id = :delivery FOR UPDATE
     ), logged AS (
       INSERT INTO webhook_delivery_attempts (delivery_id, attempt, job_id, started_at, latency_ms, response_status, response_body, error_code, error)
       SELECT d.id, d.attempt, :job::uuid, :started::timestamptz, :latency::int, :status::int, :body::text, :code::text, :error::text FROM d
     ), delivery AS (
       UPDATE webhook_deliveries w
          SET attempts = d.attempt, response_status = :status::int, response_body = :body::text, latency_ms = :latency::int,
              last_attempt_at = :started::timestamptz,
              status = CASE WHEN :ok::boolean THEN 'succeeded' ELSE w.status END,
              status_reason = CASE WHEN :ok::boolean THEN NULL ELSE :reason::text END,
              delivered_at = CASE WHEN :ok::boolean THEN now() ELSE w.delivered_at END
         FROM d WHERE w.id = d.id
     ), endpoint AS (
       UPDATE webhook_endpoints
          SET failing_since = CASE WHEN :ok::boolean THEN NULL ELSE COALESCE(failing_since, now()) END
        WHERE id = :endpoint AND EXISTS (SELECT 1 FROM d) AND (NOT :ok::boolean OR failing_since IS NOT NULL)
       RETURNING enabled, failing_since <= now() - make_interval(hours => :hours) AS failed_long
     ), freed AS (
       UPDATE webhook_endpoint_slots SET holder = NULL, held_until = NULL WHERE endpoint_id = :endpoint AND slot = :slot AND holder = :holder
     )
     SELECT EXISTS (SELECT 1 FROM d) AS found, (SELECT enabled AND failed_long FROM endpoint) AS disable`,
    {
      delivery: attempt.deliveryId,
      job: attempt.jobId,
      started: attempt.started,
      latency: attempt.latencyMs,
      status: attempt.status,
      body: attempt.body,
      code: attempt.error?.code ?? null,
      error: attempt.error?.message ?? null,
      ok,
      reason: reason.slice(0, 500),
      endpoint: attempt.endpointId,
      hours: DISABLE_AFTER_HOURS,
      slot: attempt.slot,
      holder: attempt.holder,
    },
  );
  const { found, disable } = rows[0] as { found: boolean; disable: boolean | null };
  if (!found) return 'settled';
  if (ok) return 'succeeded';
  if (!disable) return 'failed';
  await disableFailingEndpoint(trx, deps, attempt);
  return 'disabled';
}

async function disableFailingEndpoint(trx: Knex.Transaction, deps: Pick<Deps, 'jobs'>, attempt: SentAttempt): Promise<void> {
  await disableEndpoint(trx, deps, attempt, {
    reason: `every delivery failed for ${DISABLE_AFTER_HOURS} hours`,
    remedy: `Fix the receiver, then enable the endpoint again (PATCH /organizations/${attempt.organizationId}/webhook-endpoints/${attempt.endpointId} with {"enabled": true}) and redeliver what it missed.`,
  });
  await trx('webhook_deliveries').where({ id: attempt.deliveryId }).update({ status: 'failed', status_reason: 'the endpoint was disabled' });
}

/** The endpoint a delivery was for, as disabling it needs it. */
export interface EndpointOfDelivery {
  deliveryId: string;
  endpointId: string;
  organizationId: string;
  url: string;
}

/**
 * The service stops an endpoint: disabled with `reason` (shown on the endpoint and in /ops/webhooks),
 * and the organization's owners and admins e-mailed (`remedy`: what to do about it), once — only the transaction that turns it off
 * tells them (concurrent deliveries of the same endpoint find it disabled already).
 */
export async function disableEndpoint(
  trx: Knex.Transaction,
  deps: Pick<Deps, 'jobs'>,
  endpoint: EndpointOfDelivery,
  { reason, remedy }: { reason: string; remedy: string },
): Promise<void> {
  const turnedOff = await trx('webhook_endpoints')
    .where({ id: endpoint.endpointId, enabled: true })
    .update({ enabled: false, disabled_reason: reason, updated_at: trx.fn.now() });
  if (turnedOff === 0) return;
  const organization = (await organizationName(trx, endpoint.organizationId)) ?? 'Your organization';
  const recipients = [...new Set((await memberEmails(trx, endpoint.organizationId, ['owner', 'admin'])).map((email) => email.toLowerCase()))].sort();
  const host = new URL(endpoint.url).host;
  for (const to of recipients) {
    await deps.jobs.enqueue(
      trx,
      webhookEndpointDisabledEmailJob,
      {
        organization_id: endpoint.organizationId,
        endpoint_id: endpoint.endpointId,
        to,
        subject: `${organization}: webhook endpoint ${host} disabled`,
        text: `The webhook endpoint ${endpoint.url} of ${organization} was disabled: ${reason}.\n\n${remedy}`,
        idempotency_key: `webhook-endpoint-disabled:${endpoint.endpointId}:${endpoint.deliveryId}:${to}`,
      },
      { organizationId: endpoint.organizationId },
    );
  }
}
