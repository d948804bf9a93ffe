import { eventTypeList, type EventType } from '../core/events.ts';
import { pageOf, pageQuery } from '../core/pagination.ts';
import { commaSeparated, oneOfWords, timestamp, uuid, z } from '../core/zod.ts';

/** Events are kept this long; lists, streams and resumption reach no further back. */
export const EVENT_RETENTION_DAYS = 30;

const eventType = z.enum(eventTypeList as [EventType, ...EventType[]]);

/** `type=a,b` (or `type` repeated): each one of the event types. */
const typeFilter = z
  .union([z.string(), z.array(z.string())])
  .transform((value, ctx) => {
    const names = (Array.isArray(value) ? value : [value]).flatMap((v) => v.split(',')).map((v) => v.trim());
    const unknown = names.filter((name) => !eventType.safeParse(name).success);
    if (unknown.length || names.length === 0 || names.length > eventTypeList.length) {
      ctx.addIssue({ code: 'custom', message: `unknown event type "${unknown[0] ?? ''}"; one of ${eventTypeList.join(', ')}` });
      return z.NEVER;
    }
    return [...new Set(names)] as EventType[];
  })
  .optional()
  .openapi({
    description: 'Only events of these types (comma-separated, or the parameter repeated).',
    pattern: commaSeparated(oneOfWords(eventTypeList)),
    example: 'generation.succeeded,generation.failed',
    type: 'string',
  });

export const eventSchema = z
  .object({
    id: uuid.openapi({ description: 'The event id (the SSE `id:`; the `webhook-id` of webhook deliveries).' }),
    type: eventType,
    organization_id: z.string(),
    created_at: timestamp.openapi({ description: 'When the change began (its transaction’s start).' }),
    data: z
      .object({ object: z.record(z.string(), z.unknown()) })
      .openapi({ description: 'The resource as the API presents it; its schema per type is in the `webhooks` section of this document.' }),
  })
  .openapi('Event');

export const eventPage = pageOf(eventSchema).openapi('EventPage');

export const listEventsQuery = z.object({
  ...pageQuery,
  type: typeFilter,
  since: timestamp.optional().openapi({ description: 'Only events at or after this instant.' }),
  until: timestamp.optional().openapi({ description: 'Only events before this instant.' }),
});

export const streamEventsQuery = z.object({
  type: typeFilter,
  last_event_id: uuid
    .optional()
    .openapi({ description: 'Resume after this event, like the `Last-Event-ID` header (for clients that cannot set headers); the header wins.' }),
});

export const streamHeaders = z.object({
  'last-event-id': uuid.optional().openapi({ description: 'Resume right after this event (browsers send it when they reconnect).' }),
});
