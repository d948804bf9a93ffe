import { z } from '../core/zod.ts';
import { defineJob } from '../jobs/define.ts';

/**
 * Deliveries one endpoint may have in flight at once, across every worker: exactly, by the
 * endpoint's slots (./slots.ts); pg-boss's group limit (the group being the endpoint) keeps most of
 * the surplus from being fetched at all.
 */
export const ENDPOINT_CONCURRENCY = 4;

/**
 * One delivery of one event to one endpoint: a signed POST, retried with exponential backoff and
 * jitter (pg-boss: 30 s × 2ⁿ × (1 + random), at most 12 h apart) — 16 attempts over about three
 * days. Its jobs are grouped by endpoint, not organization, and each attempt sends only while it holds
 * one of its endpoint's ENDPOINT_CONCURRENCY slots, so a slow or dead endpoint holds at most that
 * many of the queue's slots and every other endpoint keeps being served.
 */
export const webhookDeliveryJob = defineJob({
  name: 'webhooks.deliver',
  version: 1,
  nature: 'waits',
  payload: z.object({ delivery_id: z.string().uuid() }),
  searchable: ['delivery_id'],
  policy: { retryLimit: 15, retryDelaySeconds: 30, retryBackoff: true, retryDelayMaxSeconds: 12 * 3600, expireInSeconds: 60 },
  // An attempt waits on the receiver (≤ 10 s), not on the database: slots of its own (WEBHOOK_DELIVERY_CONCURRENCY), few per endpoint.
  work: { localConcurrency: (config) => config.WEBHOOK_DELIVERY_CONCURRENCY, groupConcurrency: ENDPOINT_CONCURRENCY },
  expectedSeconds: 15,
});

const disabledEmailPayload = z.object({
  organization_id: z.string(),
  endpoint_id: z.string(),
  to: z.string(),
  subject: z.string(),
  text: z.string(),
  idempotency_key: z.string(),
});
export type EndpointDisabledEmail = z.output<typeof disabledEmailPayload>;

/** Tells one of the organization's owners and admins that the service disabled a failing endpoint. */
export const webhookEndpointDisabledEmailJob = defineJob({
  name: 'webhooks.endpoint-disabled-email',
  version: 1,
  nature: 'waits',
  payload: disabledEmailPayload,
  searchable: ['organization_id', 'endpoint_id'],
  sensitive: ['to'],
});
