// Every event type's payload schema: the OpenAPI `webhooks` section (one entry per type), the
// check of recorded payloads in tests, and the contract of webhook receivers. The types and who
// may see them are declared in src/core/events.ts; each domain presents its own object.
import type { OpenAPIRegistry } from '@asteasolutions/zod-to-openapi';
import { assetSchema } from '../assets/index.ts';
import { subscriptionSchema } from '../billing/index.ts';
import { connectorConnectionEventSchema } from '../connectors/index.ts';
import { chatRunSchema } from '../conversations/index.ts';
import { eventTypes, type EventType } from '../core/events.ts';
import { timestamp, uuid, z } from '../core/zod.ts';
import { creditsSchema } from '../credits/index.ts';
import { generationSchema } from '../generations/index.ts';
import { invitationSchema } from '../invitations/index.ts';
import { memberSchema } from '../members/index.ts';
import { scheduledTaskRunSchema } from '../scheduled-tasks/index.ts';

const balanceAlert = creditsSchema.extend({
  threshold: z.number().int().openapi({ description: 'The alert threshold crossed downward (0 for `credits.exhausted`).' }),
});

interface EventDoc {
  object: z.ZodType;
  /** When it is recorded, in the product's words. */
  summary: string;
}

const catalog: Record<EventType, EventDoc> = {
  'asset.import.succeeded': { object: assetSchema, summary: 'A link import stored its file (enrichment follows).' },
  'asset.import.failed': { object: assetSchema, summary: 'A link import ended without a file; `import_error` says why.' },
  'asset.upload.succeeded': { object: assetSchema, summary: 'An upload completed and the file is stored.' },
  'asset.upload.failed': { object: assetSchema, summary: 'An upload was refused or abandoned.' },
  'asset.enriched': { object: assetSchema, summary: 'Enrichment measured the asset (`enrichment`).' },
  'generation.succeeded': { object: generationSchema, summary: 'A generation produced its assets (`asset_ids`) and was charged.' },
  'generation.failed': { object: generationSchema, summary: 'A generation failed; its hold was released.' },
  'generation.canceled': { object: generationSchema, summary: 'A generation was canceled; its hold was released.' },
  'conversation.run.succeeded': { object: chatRunSchema, summary: 'A chat turn answered (`answer_message_id`).' },
  'conversation.run.failed': { object: chatRunSchema, summary: 'A chat turn failed (`error`).' },
  'conversation.run.canceled': { object: chatRunSchema, summary: 'A chat turn was stopped (status `stopped`); the partial answer is kept.' },
  'scheduled_task.run.succeeded': { object: scheduledTaskRunSchema, summary: 'A scheduled task run answered.' },
  'scheduled_task.run.failed': { object: scheduledTaskRunSchema, summary: 'A scheduled task run failed (`error`).' },
  'scheduled_task.run.skipped': { object: scheduledTaskRunSchema, summary: 'A scheduled task run was skipped: no credits or spending limit reached.' },
  'scheduled_task.run.canceled': {
    object: scheduledTaskRunSchema,
    summary: 'A scheduled task run was canceled (by a caller, or its task was disabled or deleted).',
  },
  'credits.low_balance': { object: balanceAlert, summary: 'Available credits fell to or below one of the alert policy’s thresholds.' },
  'credits.exhausted': { object: balanceAlert, summary: 'Available credits fell to zero or below.' },
  'member.added': { object: memberSchema, summary: 'Someone joined the organization (invitation accepted, or its creator).' },
  'member.removed': { object: memberSchema, summary: 'A member was removed or left (the member as they were).' },
  'invitation.accepted': { object: invitationSchema, summary: 'An invitation was accepted.' },
  'billing.subscription.updated': { object: subscriptionSchema, summary: 'The subscription changed: plan, scheduled change, status or billing period.' },
  'connector.connection.changed': {
    object: connectorConnectionEventSchema,
    summary: 'An OAuth connection to a connector was made, refused (needs re-consent, expired) or revoked; never carries a token.',
  },
};

const componentName = (type: EventType) =>
  `${type
    .split(/[._]/)
    .map((word) => word[0]!.toUpperCase() + word.slice(1))
    .join('')}Event`;

/** The envelope every event travels in, for one type. */
export const eventEnvelope = (type: EventType) =>
  z
    .object({
      id: uuid.openapi({ description: 'The event id: the SSE `id:` of the stream, the `webhook-id` of a delivery. Receivers dedupe on it.' }),
      type: z.literal(type),
      organization_id: z.string(),
      created_at: timestamp,
      data: z.object({ object: catalog[type].object }),
    })
    .openapi(componentName(type), { description: catalog[type].summary });

/** Who may receive an event of the type, in words (OpenAPI). */
const audience = (type: EventType) => {
  const need = eventTypes[type];
  return need === 'resource' ? 'whoever can read the resource it is about when it is delivered' : `members holding \`${need}\``;
};

/** One `webhooks` entry per event type (OpenAPI 3.1): what a receiver gets, and whom it reaches. */
export function registerEventWebhooks(registry: OpenAPIRegistry): void {
  for (const type of Object.keys(catalog) as EventType[]) {
    registry.registerWebhook({
      method: 'post',
      path: type,
      operationId: `event:${type}`,
      summary: catalog[type].summary,
      description: `Recorded in the transaction of the change it describes. Listed and streamed (GET /organizations/{organization_id}/events, …/events/stream) to ${audience(type)}; the same body is what webhook endpoints receive.`,
      tags: ['Events'],
      request: { body: { content: { 'application/json': { schema: eventEnvelope(type) } } } },
      responses: { 200: { description: 'Any 2xx acknowledges the event.' } },
    });
  }
}
