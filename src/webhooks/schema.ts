import { eventTypeList } from '../core/events.ts';
import { pageOf, pageQuery } from '../core/pagination.ts';
import { CHECKED_BY_SERVER, HTTP_URL_PATTERN, singleLine, timestamp, uuid, z } from '../core/zod.ts';

/**
 * The event types an endpoint may subscribe to (issue 23's event log); `*` subscribes to every
 * type, present and future. `ping` is not subscribable: `POST …/test` sends it to one endpoint.
 */
/** The types an endpoint may subscribe to: every event the log records (src/core/events.ts). */
export const webhookEventTypes = eventTypeList;

export const ALL_EVENT_TYPES = '*';

const eventTypes = z
  .array(z.enum([ALL_EVENT_TYPES, ...webhookEventTypes]))
  .min(1)
  .max(100)
  .refine((types) => new Set(types).size === types.length, 'must not repeat a type')
  .openapi({ description: `Event types to receive (1–100, no repeats): ${webhookEventTypes.map((t) => `\`${t}\``).join(', ')}, or \`*\` for every type.` });

const url = z
  .string()
  .min(1)
  .max(2048)
  .openapi({
    pattern: HTTP_URL_PATTERN,
    [CHECKED_BY_SERVER]: true,
    description:
      'Where deliveries are POSTed, `http` or `https`; refused (400) when it names a loopback, private, link-local or other non-public address, or a name resolving to one, unless `OUTBOUND_ALLOWLIST` opens it. Checked again at every attempt.',
  });
const description = singleLine(500).nullable();

export const endpointIdParams = z.object({
  organization_id: z.string().min(1).max(64),
  endpoint_id: uuid.openapi({ description: 'Webhook endpoint id (UUID).' }),
});
export const deliveryIdParams = endpointIdParams.extend({ delivery_id: uuid.openapi({ description: 'Delivery id (UUID).' }) });

export const webhookEndpointSchema = z
  .object({
    id: uuid,
    organization_id: z.string(),
    url: z.string(),
    event_types: z.array(z.string()),
    description: z.string().nullable(),
    enabled: z.boolean(),
    disabled_reason: z.string().nullable().openapi({ description: 'Set when the service disabled the endpoint (it failed for days); null otherwise.' }),
    failing_since: timestamp.nullable().openapi({ description: 'First failed attempt since the last success; null while deliveries succeed.' }),
    secret_rotation_ends_at: timestamp.nullable().openapi({ description: 'While set, the previous secret still signs beside the current one (until then).' }),
    created_by_id: z.string(),
    created_at: timestamp,
    updated_at: timestamp,
  })
  .strict()
  .openapi('WebhookEndpoint', {
    description:
      'Where an organization receives its events. The endpoint receives an event only while the member who created it belongs to the organization and can read the resource the event is about.',
  });

export const webhookEndpointEnvelope = z.object({ webhook_endpoint: webhookEndpointSchema }).strict().openapi('WebhookEndpointEnvelope');
export const webhookEndpointWithSecret = z
  .object({
    webhook_endpoint: webhookEndpointSchema,
    secret: z.string().openapi({ description: 'The signing secret (`whsec_…`, Standard Webhooks). Shown only in this answer.' }),
  })
  .strict()
  .openapi('WebhookEndpointWithSecret');
export const webhookEndpointPage = pageOf(webhookEndpointSchema).openapi('WebhookEndpointPage');

export const createWebhookEndpointBody = z
  .object({ url, event_types: eventTypes, description: description.optional(), enabled: z.boolean().optional().openapi({ description: 'Default true.' }) })
  .strict()
  .openapi('CreateWebhookEndpoint');

export const updateWebhookEndpointBody = z
  .object({
    url: url.optional(),
    event_types: eventTypes.optional(),
    description: description.optional(),
    enabled: z.boolean().optional().openapi({ description: 'Re-enabling an endpoint the service disabled clears its failure record.' }),
  })
  .strict()
  .openapi('UpdateWebhookEndpoint');

export const listQuery = z.object(pageQuery).strict();

export const deliveryStatuses = ['pending', 'succeeded', 'failed', 'skipped'] as const;

export const webhookDeliverySchema = z
  .object({
    id: uuid,
    endpoint_id: uuid,
    event_id: z.string(),
    event_type: z.string(),
    status: z.enum(deliveryStatuses).openapi({
      description:
        '`pending` (queued or retrying), `succeeded` (a 2xx answer), `failed` (retries exhausted, or the endpoint was disabled), `skipped` (not sent: see `status_reason`).',
    }),
    status_reason: z.string().nullable(),
    attempts: z.number().int(),
    response_status: z.number().int().nullable().openapi({ description: 'HTTP status of the last attempt (null: no answer).' }),
    response_body: z.string().nullable().openapi({ description: 'The last answer’s body, its first 4 KiB.' }),
    latency_ms: z.number().int().nullable(),
    last_attempt_at: timestamp.nullable(),
    delivered_at: timestamp.nullable(),
    redelivery_of: uuid.nullable(),
    created_at: timestamp,
  })
  .strict()
  .openapi('WebhookDelivery');
export const webhookDeliveryEnvelope = z.object({ webhook_delivery: webhookDeliverySchema }).strict().openapi('WebhookDeliveryEnvelope');
export const webhookDeliveryPage = pageOf(webhookDeliverySchema).openapi('WebhookDeliveryPage');

export type CreateWebhookEndpoint = z.output<typeof createWebhookEndpointBody>;
export type UpdateWebhookEndpoint = z.output<typeof updateWebhookEndpointBody>;
