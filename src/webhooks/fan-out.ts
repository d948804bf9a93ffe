import type { RecordedEvent } from '../core/events.ts';
import type { Knex } from 'knex';
import type { Deps } from '../platform/deps.ts';
import { webhookDeliveryJob } from './jobs.ts';
import { ALL_EVENT_TYPES } from './schema.ts';

/** An event as the event log records it; `subject` is the resource it is about (access is decided on it at delivery). */
/** An event as the log records it (src/core/events.ts), with the subject access is checked against. */
export type WebhookEvent = RecordedEvent;

/** The message a receiver gets: the event without its subject (which is the API's own bookkeeping). */
export const messageOf = (event: WebhookEvent) => ({
  id: event.id,
  type: event.type,
  organization_id: event.organization_id,
  created_at: event.created_at,
  data: event.data,
});

/**
 * Call in the transaction that records the event: one delivery row and one pg-boss job per
 * enabled endpoint of the organization subscribed to the type, so deliveries exist exactly when the
 * event commits. Who may receive it is decided at delivery time, not here (access may change).
 */
export async function fanOutEvent(trx: Knex.Transaction, event: WebhookEvent, deps: Pick<Deps, 'jobs'>): Promise<void> {
  const deliveries: { id: string; endpoint_id: string }[] = await trx
    .insert(
      trx('webhook_endpoints')
        .where({ organization_id: event.organization_id, enabled: true })
        .whereRaw('event_types && ?::text[]', [[event.type, ALL_EVENT_TYPES]])
        .select(
          'id as endpoint_id',
          'organization_id',
          trx.raw('?::text as event_id', [event.id]),
          trx.raw('?::text as event_type', [event.type]),
          trx.raw('?::jsonb as payload', [JSON.stringify(messageOf(event))]),
          trx.raw('?::text as subject_type', [event.subject?.type ?? null]),
          trx.raw('?::text as subject_id', [event.subject?.id ?? null]),
        ),
    )
    .into(trx.raw('webhook_deliveries (endpoint_id, organization_id, event_id, event_type, payload, subject_type, subject_id)'))
    .returning(['id', 'endpoint_id']);
  await deps.jobs.enqueueMany(
    trx,
    webhookDeliveryJob,
    deliveries.map((delivery) => ({ payload: { delivery_id: delivery.id }, organizationId: event.organization_id, group: delivery.endpoint_id })),
  );
}
