import { expect } from 'chai';
import type { EventType } from '../../src/core/events.ts';
import { eventEnvelope } from '../../src/events/index.ts';
import { eventually } from '../support/eventually.ts';
import type { TestServer, TestUser } from '../support/server.ts';

export interface ListedEvent {
  id: string;
  type: EventType;
  organization_id: string;
  created_at: string;
  data: { object: any };
}

/** Every event of the organization `user` may see, oldest first (all pages of the list). */
export async function eventsSeenBy(server: TestServer, user: TestUser, org: string, query: Record<string, string | number> = {}): Promise<ListedEvent[]> {
  const all: ListedEvent[] = [];
  let cursor: string | undefined;
  do {
    const res = await server.request('get', `/organizations/${org}/events`, { token: user.token, query: { limit: 100, ...query, cursor } });
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    all.push(...res.body.items);
    cursor = res.body.next_cursor ?? undefined;
  } while (cursor);
  return all.reverse();
}

/** Waits until `user` sees an event of `type` matching `where` in the list; checks it against its `webhooks` schema. */
export async function awaitEvent(server: TestServer, user: TestUser, org: string, type: EventType, where: (event: ListedEvent) => boolean = () => true) {
  const event = await eventually(`a ${type} event`, async () => (await eventsSeenBy(server, user, org, { type })).find(where) ?? null, { everyMs: 200 });
  expectEnvelope(event);
  return event;
}

/** The event matches the schema its type declares in the OpenAPI `webhooks` section (the object as the API presents it). */
export function expectEnvelope(event: ListedEvent): void {
  const parsed = eventEnvelope(event.type).safeParse(event);
  expect(parsed.success, `${event.type}: ${JSON.stringify(parsed.error?.issues.slice(0, 3))}`).to.equal(true);
}
