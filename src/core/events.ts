import type { Knex } from 'knex';

/**
 * Every event type, and who may see one: `resource` — whoever can read its subject (the access
 * predicate of lists, at delivery time); otherwise the organization permission it needs (events
 * about the organization itself, with no subject). Past tense, dotted, in the product's words.
 * Their payload schemas are in src/events/catalog.ts (the OpenAPI `webhooks` section).
 */
export const eventTypes = {
  'asset.import.succeeded': 'resource',
  'asset.import.failed': 'resource',
  'asset.upload.succeeded': 'resource',
  'asset.upload.failed': 'resource',
  'asset.enriched': 'resource',
  'generation.succeeded': 'resource',
  'generation.failed': 'resource',
  'generation.canceled': 'resource',
  'conversation.run.succeeded': 'resource',
  'conversation.run.failed': 'resource',
  'conversation.run.canceled': 'resource',
  'scheduled_task.run.succeeded': 'resource',
  'scheduled_task.run.failed': 'resource',
  'scheduled_task.run.skipped': 'resource',
  'scheduled_task.run.canceled': 'resource',
  'credits.low_balance': 'credits.view',
  'credits.exhausted': 'credits.view',
  'member.added': 'members.view',
  'member.removed': 'members.view',
  'invitation.accepted': 'invitations.manage',
  'billing.subscription.updated': 'billing.view',
  'connector.connection.changed': 'connectors.manage',
} as const;

export type EventType = keyof typeof eventTypes;
export const eventTypeList = Object.keys(eventTypes) as EventType[];

/** The resource an event is about: `asset`, `chat_conversation`, `scheduled_task`, `generation`… */
export interface EventSubject {
  type: string;
  id: string;
}

export interface EventInput {
  organizationId: string;
  type: EventType;
  /** Required for `resource` types, null for the others (see `eventTypes`). */
  subject: EventSubject | null;
  /** The resource as the API presents it (its domain's presenter), never a secret. */
  object: unknown;
}

/** An event as published: what lists, streams and webhooks send, plus its subject for access checks. */
export interface RecordedEvent {
  id: string;
  type: EventType;
  organization_id: string;
  created_at: string;
  data: { object: unknown };
  /** Not part of the payload: whom to check read access against when delivering. */
  subject: EventSubject | null;
}

/**
 * Called in the recording transaction for every event, after its row is written: work that must
 * commit (or roll back) with the event, e.g. a webhook fan-out enqueueing one delivery per
 * endpoint. Throwing rolls the change back.
 */
export type EventSubscriber = (trx: Knex.Transaction, event: RecordedEvent) => Promise<void>;

/** Channel every web process LISTENs on (src/events/stream.ts); the key is the organization id. */
export const EVENTS_CHANNEL = 'organization_events';

// ── The single hook point ───────────────────────────────────────────────────────────────────
// Subscribers are registered by the composition root (src/app/deps.ts) at start, never by an
// import: the events log does not know who listens. Kept on globalThis for the reason the resource
// registry is (src/access/registry.ts): under tsx a process may hold two instances of this module
// (one reached through `require`, one through a job handler's lazy `import()`), and both must
// call the same subscribers.
const slot = globalThis as { __workspaceEventSubscribers?: Map<string, EventSubscriber> };
slot.__workspaceEventSubscribers ??= new Map();
const afterRecord: Map<string, EventSubscriber> = slot.__workspaceEventSubscribers;

/**
 * Registers the subscriber `name` for every recorded event (composition roots only), replacing an
 * earlier one of that name — a process that builds its dependencies again (tests do) keeps one.
 * Returns the unregister.
 */
export function onEventRecorded(name: string, subscriber: EventSubscriber): () => void {
  afterRecord.set(name, subscriber);
  return () => {
    if (afterRecord.get(name) === subscriber) afterRecord.delete(name);
  };
}

/**
 * Appends an event to the log. Call it with the transaction of the change it describes (every
 * domain that ends something records it, like `recordActivity`, so the writer sits in the shared
 * kernel): the event commits with the change or not at all. Streams are woken at commit by NOTIFY.
 */
export async function recordEvent(trx: Knex.Transaction, input: EventInput): Promise<RecordedEvent> {
  if ((eventTypes[input.type] === 'resource') !== (input.subject !== null))
    throw new Error(`event ${input.type}: ${input.subject ? 'takes no subject' : 'needs the resource it is about'}`);
  const data = { object: input.object };
  const [row] = (await trx('events')
    .insert({
      organization_id: input.organizationId,
      type: input.type,
      subject_type: input.subject?.type ?? null,
      subject_id: input.subject?.id ?? null,
      data: JSON.stringify(data),
    })
    // Streams are woken by the insert itself (a column of its RETURNING: no round trip of its own), with
    // src/db/notifications.ts `notify`'s payload (core imports nothing else): delivered at commit, ids only.
    .returning(['id', 'created_at', trx.raw('pg_notify(?, ?) AS notified', [EVENTS_CHANNEL, JSON.stringify({ key: input.organizationId })])])) as {
    id: string;
    created_at: Date;
  }[];
  const event: RecordedEvent = {
    id: row!.id,
    type: input.type,
    organization_id: input.organizationId,
    created_at: row!.created_at.toISOString(),
    data,
    subject: input.subject,
  };
  for (const subscriber of [...afterRecord.values()]) await subscriber(trx, event);
  return event;
}
