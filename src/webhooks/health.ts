import type { Knex } from 'knex';
import { timestamp, z } from '../core/zod.ts';
import { findJobRows } from '../jobs/boss-sql/index.ts';

/** How many failing (and how many disabled) endpoints the console lists. */
const ENDPOINTS_SHOWN = 20;

const lastFailure = {
  last_error: z
    .string()
    .nullable()
    .openapi({ description: 'Why the endpoint’s latest failed attempt failed (the status it answered, or the transport error), in words.' }),
  last_attempt_at: timestamp.nullable().openapi({ description: 'When that attempt started.' }),
  last_failed_job_id: z
    .string()
    .nullable()
    .openapi({ description: 'The `webhooks.deliver` job of that delivery: its page in the job console shows every attempt and can retry it now.' }),
};

export const webhookHealthSchema = z
  .object({
    backlog: z.object({
      pending: z.number().int().openapi({ description: 'Deliveries queued or waiting for a retry.' }),
      oldest_pending_seconds: z.number().nullable().openapi({ description: 'Age of the oldest of them (null: none).' }),
    }),
    failing_endpoints: z
      .array(
        z.object({
          endpoint_id: z.string(),
          organization_id: z.string(),
          // The host only: a URL's path or query may carry a receiver's token.
          host: z.string(),
          failing_since: timestamp,
          pending: z.number().int(),
          ...lastFailure,
          next_attempt_at: timestamp.nullable().openapi({
            description: 'When the delivery that failed last is tried again (its job’s backoff); null when it is not waiting for a retry (running, or ended).',
          }),
        }),
      )
      .openapi({ description: `Enabled endpoints whose last attempts failed, longest failing first (at most ${ENDPOINTS_SHOWN}).` }),
    disabled_endpoints: z.number().int().openapi({ description: 'Endpoints the service disabled after failing for days.' }),
    disabled: z
      .array(
        z.object({
          endpoint_id: z.string(),
          organization_id: z.string(),
          host: z.string(),
          disabled_reason: z.string(),
          disabled_at: timestamp.openapi({ description: 'When the endpoint last changed: its disabling, unless someone edited it since.' }),
          ...lastFailure,
        }),
      )
      .openapi({
        description: `The endpoints the service disabled, most recently disabled first (at most ${ENDPOINTS_SHOWN}): nothing is attempted until an owner or admin enables them again.`,
      }),
  })
  .openapi('WebhookHealth');
export type WebhookHealth = z.input<typeof webhookHealthSchema>;

interface EndpointRow {
  id: string;
  organization_id: string;
  url: string;
  failing_since: Date | null;
  updated_at: Date;
  disabled_reason: string | null;
  pending: number;
  last_error: string | null;
  last_attempt_at: Date | null;
  last_failed_job_id: string | null;
}

/**
 * The endpoint's latest failed attempt (its delivery's reason in words, and the job that retries it),
 * found through webhook_deliveries_attempted_idx.
 */
const LAST_FAILURE = `LEFT JOIN LATERAL (
    SELECT d.status_reason AS last_error, d.last_attempt_at, a.job_id AS last_failed_job_id
      FROM webhook_deliveries d
      LEFT JOIN webhook_delivery_attempts a ON a.delivery_id = d.id AND a.attempt = d.attempts
     WHERE d.endpoint_id = e.id AND d.last_attempt_at IS NOT NULL AND d.status IN ('pending', 'failed')
     ORDER BY d.last_attempt_at DESC
     LIMIT 1) f ON true`;

/** Webhook delivery backlog, failing and disabled endpoints, service-wide or of one organization (the job console's scope). */
export async function webhookHealth(db: Knex, organizationId: string | null): Promise<WebhookHealth> {
  const scoped = (query: Knex.QueryBuilder, column: string) => (organizationId ? query.where(column, organizationId) : query);
  const endpoints = (query: Knex.QueryBuilder): Promise<EndpointRow[]> =>
    scoped(query, 'e.organization_id')
      .joinRaw(LAST_FAILURE)
      .limit(ENDPOINTS_SHOWN)
      .select(
        'e.id',
        'e.organization_id',
        'e.url',
        'e.failing_since',
        'e.updated_at',
        'e.disabled_reason',
        db.raw(`(SELECT count(*)::int FROM webhook_deliveries p WHERE p.endpoint_id = e.id AND p.status = 'pending') AS pending`),
        'f.last_error',
        'f.last_attempt_at',
        'f.last_failed_job_id',
      );
  const backlog = await scoped(db('webhook_deliveries as d').where('d.status', 'pending'), 'd.organization_id').first(
    db.raw('count(*)::int AS pending'),
    db.raw('extract(epoch FROM now() - min(d.created_at))::float AS oldest_pending_seconds'),
  );
  const failing = await endpoints(db('webhook_endpoints as e').where('e.enabled', true).whereNotNull('e.failing_since').orderBy('e.failing_since'));
  const disabled = await endpoints(db('webhook_endpoints as e').where('e.enabled', false).whereNotNull('e.disabled_reason').orderBy('e.updated_at', 'desc'));
  const disabledCount = await scoped(db('webhook_endpoints as e').where('e.enabled', false).whereNotNull('e.disabled_reason'), 'e.organization_id').first(
    db.raw('count(*)::int AS count'),
  );
  // When each failing endpoint is tried next: the retry pg-boss scheduled for its latest failure.
  const jobs = await findJobRows(
    db,
    failing.map((row) => row.last_failed_job_id).filter((id): id is string => id !== null),
  );
  const waiting = new Map(jobs.filter((job) => job.state === 'created' || job.state === 'retry').map((job) => [job.id, job.start_after]));
  const failure = (row: EndpointRow) => ({
    last_error: row.last_error,
    last_attempt_at: row.last_attempt_at?.toISOString() ?? null,
    last_failed_job_id: row.last_failed_job_id,
  });
  return {
    backlog: { pending: backlog.pending, oldest_pending_seconds: backlog.oldest_pending_seconds },
    failing_endpoints: failing.map((row) => ({
      endpoint_id: row.id,
      organization_id: row.organization_id,
      host: new URL(row.url).host,
      failing_since: row.failing_since!.toISOString(),
      pending: row.pending,
      ...failure(row),
      next_attempt_at: (row.last_failed_job_id && waiting.get(row.last_failed_job_id)?.toISOString()) || null,
    })),
    disabled_endpoints: disabledCount.count,
    disabled: disabled.map((row) => ({
      endpoint_id: row.id,
      organization_id: row.organization_id,
      host: new URL(row.url).host,
      disabled_reason: row.disabled_reason!,
      disabled_at: row.updated_at.toISOString(),
      ...failure(row),
    })),
  };
}
