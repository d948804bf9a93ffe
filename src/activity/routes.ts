import { member } from '../http/authorize.ts';
import { organizationIdParams } from '../core/zod.ts';
import { defineRoute, type AnyRoute } from '../http/route.ts';
import { activityFeed } from './feed.ts';
import { presentActivityEvent } from './presenter.ts';
import { activityPage, activityQuery } from './schema.ts';

export const activityRoutes: AnyRoute[] = [
  defineRoute({
    method: 'get',
    path: '/organizations/{organization_id}/activity',
    operationId: 'listOrganizationActivity',
    summary: 'The activity feed of an organization, newest first',
    description:
      'Needs `activity.view`. Every change to the organization (settings, members, roles, alert policy…) is recorded in the transaction that made it. An entry about a resource (asset, conversation, canvas, project, skill, scheduled task — its subject, or the item a project entry names) is listed only to callers who can read that resource; ids in `data` naming a resource the caller cannot read (`project_id`, `forked_from_conversation_id`) are null. Owners and admins see every entry.',
    tag: 'Activity',
    params: organizationIdParams,
    query: activityQuery,
    response: { status: 200, description: 'A page of activity events', schema: activityPage },
    errors: [403, 404],
    authorize: member('activity.view'),
    handler: async ({ params, query, actor, deps }) => {
      // The route's gate admitted a member, so the viewer exists.
      const viewer = (await actor.viewer(params.organization_id))!;
      const page = await activityFeed(deps, viewer, query);
      return { items: page.items.map(presentActivityEvent), next_cursor: page.next_cursor };
    },
  }),
];
