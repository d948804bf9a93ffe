import { organizationIdParams } from '../core/zod.ts';
import { member } from '../http/authorize.ts';
import { defineRoute, type AnyRoute } from '../http/route.ts';
import { listEvents } from './list.ts';
import { presentEvent } from './presenter.ts';
import { EVENT_RETENTION_DAYS, eventPage, listEventsQuery, streamEventsQuery, streamHeaders } from './schema.ts';
import { STREAMS_PER_CALLER, streamEvents } from './stream.ts';

const tag = 'Events';

const seen =
  'An event about a resource (asset, generation, conversation, scheduled task) is shown only to members who can read that resource now (the access predicate of lists); an event about the organization (credits, members, invitations, billing) only to members holding the permission its type names (`credits.view`, `members.view`, `invitations.manage`, `billing.view`; see the `webhooks` section). Owners and admins see every event.';

export const eventRoutes: AnyRoute[] = [
  defineRoute({
    method: 'get',
    path: '/organizations/{organization_id}/events',
    operationId: 'listOrganizationEvents',
    summary: 'The events of an organization, newest first',
    description: `Every event is recorded in the transaction of the change it describes, and kept ${EVENT_RETENTION_DAYS} days. ${seen} Keyset-paged; filter by \`type\` and by time (\`since\`, \`until\`). Each type's \`data.object\` is described in the \`webhooks\` section.`,
    tag,
    params: organizationIdParams,
    query: listEventsQuery,
    response: { status: 200, description: 'A page of events', schema: eventPage },
    errors: [404],
    authorize: member(),
    handler: async ({ params, query, actor, deps }) => {
      // The route's gate admitted a member, so both exist.
      const membership = (await actor.membership(params.organization_id))!;
      const viewer = (await actor.viewer(params.organization_id))!;
      const page = await listEvents(deps, viewer, membership, query);
      return { items: page.items.map(presentEvent), next_cursor: page.next_cursor };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/organizations/{organization_id}/events/stream',
    operationId: 'streamOrganizationEvents',
    summary: 'Follow the events of an organization live (Server-Sent Events)',
    description: `A \`text/event-stream\` (not JSON): each event the caller may see as \`id: <event id>\`, \`event: <type>\`, \`data: <the event, as listed>\`, in commit-safe order; a \`: ping\` comment every 15 s. Reconnect with \`Last-Event-ID\` (browsers do it by themselves) to receive exactly the events after that one — none missed, none twice — whichever web process answers; without it the stream starts now. An id older than ${EVENT_RETENTION_DAYS} days or of another organization is refused (400). ${seen} Access is checked as each event is sent; a caller who leaves the organization is disconnected, and the stream ends when the token that opened it expires (\`: token expired\`): reconnect with a fresh token and \`Last-Event-ID\` to miss nothing. At most ${STREAMS_PER_CALLER} streams per caller at once across all processes (429 beyond).`,
    tag,
    params: organizationIdParams,
    query: streamEventsQuery,
    headers: streamHeaders,
    response: { status: 200, description: 'A `text/event-stream` of events (see the operation description)' },
    errors: [404],
    authorize: member(),
    handler: async ({ params, query, actor, deps, ctx }) =>
      streamEvents(deps, actor, params.organization_id, { lastEventId: ctx.get('last-event-id') || query.last_event_id, types: query.type }, ctx),
  }),
];
