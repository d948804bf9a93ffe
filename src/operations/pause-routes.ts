// The job console's pauses: list, set and lift a pause of a queue, an organization or a schedule.
import { allOf, anyOf, operator, recordIs, recordMember } from '../http/authorize.ts';
import { type AnyRoute, defineRoute } from '../http/route.ts';
import { consoleRoute } from './console-route.ts';
import { listPauses, pause, pauseCaller, resume } from './pause-service.ts';
import { reasonBody } from './schema.ts';
import { createPauseBody, listPausesQuery, pauseCreated, pauseIdParams, pausePage, pauseResumed } from './pause-schema.ts';

const tag = 'Operations';

export const pauseRoutes: AnyRoute[] = [
  consoleRoute('query', {
    method: 'get',
    path: '/ops/pauses',
    operationId: 'listPauses',
    summary: 'Pauses in force (or all), newest first',
    description:
      'Operators see every pause as `Pause`. An organization’s owners and admins (`jobs.manage`, naming `organization_id`) see the pauses that hold its work — its own and the service-wide ones (whole queues) — as `OrganizationPause`: what is paused, since when (`created_at`) and until when; who set it and why only for pauses the organization set itself (`set_by`).',
    query: listPausesQuery,
    response: { status: 200, description: 'A page of pauses', schema: pausePage },
    handler: ({ deps, caller, query }) => listPauses(deps, caller, query),
  }),
  consoleRoute('body', {
    method: 'post',
    path: '/ops/pauses',
    operationId: 'createPause',
    idempotent: {},
    summary: 'Pause a queue, one organization on a queue, or a schedule, with a reason and an optional expiry',
    description:
      'Workers stop starting the jobs it covers (queued ones are pushed back now; any fetched later is put back untouched, no attempt used); running jobs finish. A paused schedule does not fire (trigger-now still runs it). Queues and platform schedules: operators only; owners and admins may pause their organization on a queue and its scheduled tasks. 409 when the scope is already paused.',
    body: createPauseBody,
    response: { status: 201, description: 'The pause and how many queued jobs it deferred', schema: pauseCreated },
    errors: [409],
    handler: ({ deps, caller, body }) => pause(deps, caller, body),
  }),
  defineRoute({
    method: 'post',
    path: '/ops/pauses/{pause_id}/resume',
    operationId: 'resumePause',
    tag,
    summary: 'End a pause now: the jobs it deferred are due again at once',
    params: pauseIdParams,
    body: reasonBody,
    description:
      'Operators end any pause. An organization’s owners and admins end only the pauses their organization set (`set_by: organization`, `can_resume`); a pause an operator set — on their organization, or service-wide — is 403 to them.',
    authorize: anyOf(operator('any pause'), allOf(recordMember('pause', 'jobs.manage'), recordIs('pause', 'set_by', 'organization'))),
    response: { status: 200, description: 'The ended pause', schema: pauseResumed },
    errors: [403, 404, 409],
    handler: async ({ deps, actor, params, body }) => {
      return resume(deps, await pauseCaller(deps, actor, params.pause_id), params.pause_id, body.reason);
    },
  }),
];
