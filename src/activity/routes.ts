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
      'Needs `activity.view`. Every change to the organization (settings, members, roles, alert policy…) is recorded in the transaction that made it.',
    tag: 'Activity',
    params: organizationIdParams,
    query: activityQuery,
    response: { status: 200, description: 'A page of activity events', schema: activityPage },
    errors: [403, 404],
    authorize: member('activity.view'),
    handler: async ({ params, query, deps }) => {
      const page = await activityFeed(deps, params.organization_id, query);
      return { items: page.items.map(presentActivityEvent), next_cursor: page.next_cursor };
    },
  }),
];
