import { organizationIdParams } from '../core/zod.ts';
import { member } from '../http/authorize.ts';
import { defineRoute, type AnyRoute } from '../http/route.ts';
import { presentDelivery, presentEndpoint } from './presenter.ts';
import {
  createWebhookEndpointBody,
  deliveryIdParams,
  endpointIdParams,
  listQuery,
  updateWebhookEndpointBody,
  webhookDeliveryEnvelope,
  webhookDeliveryPage,
  webhookEndpointEnvelope,
  webhookEndpointPage,
  webhookEndpointWithSecret,
} from './schema.ts';
import { createEndpoint, deleteEndpoint, getEndpoint, listDeliveries, listEndpoints, redeliver, rotateSecret, sendPing, updateEndpoint } from './service.ts';

const tag = 'Webhooks';
const base = '/organizations/{organization_id}/webhook-endpoints';
// Every operation: 404 outside the organization (or for an endpoint of another), 403 without the permission.
const manager = member('webhooks.manage');

const signing =
  'Each delivery is a JSON `POST` of `{id, type, organization_id, created_at, data: {object}}` signed per Standard Webhooks: `webhook-id` (the event id, the same on every retry and redelivery: dedupe on it), `webhook-timestamp` and `webhook-signature` (`v1,<base64 HMAC-SHA256>`; two signatures, space-separated, while a rotated-out secret still signs). Redirects are not followed; an attempt gives up after 10 s; anything but a 2xx is retried with exponential backoff and jitter for about three days. An endpoint failing for 72 hours is disabled and the organization’s owners and admins are e-mailed. An event is delivered only while the member who created the endpoint belongs to the organization and can read the resource it is about.';

export const webhookRoutes: AnyRoute[] = [
  defineRoute({
    method: 'post',
    path: base,
    operationId: 'createWebhookEndpoint',
    idempotent: { oneTime: ['secret'] },
    summary: 'Create a webhook endpoint',
    description: `Answers the endpoint and its signing \`secret\` (\`whsec_…\`), shown only in this answer (a replay of the same Idempotency-Key leaves it out). ${signing}`,
    tag,
    params: organizationIdParams,
    body: createWebhookEndpointBody,
    response: { status: 201, description: 'The endpoint and its secret', schema: webhookEndpointWithSecret },
    errors: [403, 404, 503],
    authorize: manager,
    location: (params, answer) =>
      `${base.replace('{organization_id}', params!.organization_id!)}/${(answer as { webhook_endpoint: { id: string } }).webhook_endpoint.id}`,
    handler: async ({ params, body, actor, deps }) => {
      const { endpoint, secret } = await createEndpoint(deps, actor, params.organization_id, body);
      return { webhook_endpoint: presentEndpoint(endpoint), secret };
    },
  }),
  defineRoute({
    method: 'get',
    path: base,
    operationId: 'listWebhookEndpoints',
    summary: 'List the webhook endpoints of an organization',
    description: 'Newest first, keyset paged. Secrets are never shown.',
    tag,
    params: organizationIdParams,
    query: listQuery,
    response: { status: 200, description: 'A page of endpoints', schema: webhookEndpointPage },
    errors: [403, 404],
    authorize: manager,
    handler: async ({ params, query, deps }) => {
      const page = await listEndpoints(deps, params.organization_id, query);
      return { items: page.items.map((row) => presentEndpoint(row)), next_cursor: page.next_cursor };
    },
  }),
  defineRoute({
    method: 'get',
    path: `${base}/{endpoint_id}`,
    operationId: 'getWebhookEndpoint',
    summary: 'Get a webhook endpoint',
    tag,
    params: endpointIdParams,
    response: { status: 200, description: 'The endpoint', schema: webhookEndpointEnvelope },
    errors: [403, 404],
    authorize: manager,
    handler: async ({ params, deps }) => ({ webhook_endpoint: presentEndpoint(await getEndpoint(deps.db, params.organization_id, params.endpoint_id)) }),
  }),
  defineRoute({
    method: 'patch',
    path: `${base}/{endpoint_id}`,
    operationId: 'updateWebhookEndpoint',
    summary: 'Change a webhook endpoint',
    description:
      'Fields sent replace the current values. A new `url` passes the same check as on create (400 on `url`). `enabled: true` on an endpoint the service disabled clears its failure record.',
    tag,
    params: endpointIdParams,
    body: updateWebhookEndpointBody,
    response: { status: 200, description: 'The updated endpoint', schema: webhookEndpointEnvelope },
    errors: [403, 404],
    authorize: manager,
    handler: async ({ params, body, actor, deps }) => ({
      webhook_endpoint: presentEndpoint(await updateEndpoint(deps, actor, params.organization_id, params.endpoint_id, body)),
    }),
  }),
  defineRoute({
    method: 'delete',
    path: `${base}/{endpoint_id}`,
    operationId: 'deleteWebhookEndpoint',
    summary: 'Delete a webhook endpoint and its delivery history',
    description: 'Deliveries still queued are not sent.',
    tag,
    params: endpointIdParams,
    response: { status: 204, description: 'Deleted' },
    errors: [403, 404],
    authorize: manager,
    handler: async ({ params, actor, deps }) => {
      await deleteEndpoint(deps, actor, params.organization_id, params.endpoint_id);
    },
  }),
  defineRoute({
    method: 'post',
    path: `${base}/{endpoint_id}/rotate-secret`,
    operationId: 'rotateWebhookEndpointSecret',
    idempotent: { oneTime: ['secret'] },
    summary: 'Replace a webhook endpoint’s signing secret',
    description:
      'Answers the new `secret`, shown only in this answer. For 24 hours (`secret_rotation_ends_at`) every delivery carries a signature by the new and by the previous secret, so receivers switch without missing one.',
    tag,
    params: endpointIdParams,
    response: { status: 200, description: 'The endpoint and its new secret', schema: webhookEndpointWithSecret },
    errors: [403, 404, 503],
    authorize: manager,
    handler: async ({ params, actor, deps }) => {
      const { endpoint, secret } = await rotateSecret(deps, actor, params.organization_id, params.endpoint_id);
      return { webhook_endpoint: presentEndpoint(endpoint), secret };
    },
  }),
  defineRoute({
    method: 'post',
    path: `${base}/{endpoint_id}/test`,
    operationId: 'testWebhookEndpoint',
    idempotent: {},
    summary: 'Send a ping event to a webhook endpoint',
    description:
      'Queues a `ping` event (`data.object`: `{webhook_endpoint_id, message}`) to this endpoint alone, also when it is disabled; follow it in the deliveries list.',
    tag,
    params: endpointIdParams,
    response: { status: 202, description: 'The queued delivery', schema: webhookDeliveryEnvelope },
    errors: [403, 404],
    authorize: manager,
    handler: async ({ params, deps }) => ({ webhook_delivery: presentDelivery(await sendPing(deps, params.organization_id, params.endpoint_id)) }),
  }),
  defineRoute({
    method: 'get',
    path: `${base}/{endpoint_id}/deliveries`,
    operationId: 'listWebhookDeliveries',
    summary: 'List a webhook endpoint’s deliveries',
    description:
      'Newest first, keyset paged: status, attempts, the last attempt’s response code, latency and body (first 4 KiB), and why a delivery failed or was skipped.',
    tag,
    params: endpointIdParams,
    query: listQuery,
    response: { status: 200, description: 'A page of deliveries', schema: webhookDeliveryPage },
    errors: [403, 404],
    authorize: manager,
    handler: async ({ params, query, deps }) => {
      const page = await listDeliveries(deps, params.organization_id, params.endpoint_id, query);
      return { items: page.items.map(presentDelivery), next_cursor: page.next_cursor };
    },
  }),
  defineRoute({
    method: 'post',
    path: `${base}/{endpoint_id}/deliveries/{delivery_id}/redeliver`,
    operationId: 'redeliverWebhookDelivery',
    idempotent: {},
    summary: 'Send a delivery’s event again',
    description:
      'Queues a new delivery of the same event (`redelivery_of` names this one; same `webhook-id`), decided afresh: the endpoint’s state, its creator’s access and the secrets as they are now.',
    tag,
    params: deliveryIdParams,
    response: { status: 202, description: 'The queued delivery', schema: webhookDeliveryEnvelope },
    errors: [403, 404],
    authorize: manager,
    handler: async ({ params, deps }) => ({
      webhook_delivery: presentDelivery(await redeliver(deps, params.organization_id, params.endpoint_id, params.delivery_id)),
    }),
  }),
];
