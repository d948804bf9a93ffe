import { presentPage } from '../core/pagination.ts';
import { z } from '../core/zod.ts';
import { operator, operatorOrRecordMember, signedIn } from '../http/authorize.ts';
import { type AnyRoute, defineRoute } from '../http/route.ts';
import { consoleRoute } from './console-route.ts';
import { consoleCaller, consoleCallerFor, consoleIdentity } from './access.ts';
import { listActions } from './audit.ts';
import { bulkActionRoutes } from './bulk-routes.ts';
import { type Command, commandJob, jobDetail, listJobsFor, lookupJobs, revealPayload } from './job-service.ts';
import { organizationLoad } from './organizations.ts';
import { pauseRoutes } from './pause-routes.ts';
import { presentAction } from './presenter.ts';
import { queueHealth } from './queues.ts';
import { webhookHealth, webhookHealthSchema } from '../webhooks/index.ts';
import { listSchedules, scheduleOwner, triggerSchedule } from './schedules.ts';
import {
  auditPage,
  auditQuery,
  consoleIdentitySchema,
  jobDetailSchema,
  jobIdParams,
  jobPage,
  jobSchema,
  listJobsQuery,
  listQueuesQuery,
  listSchedulesQuery,
  listWorkersQuery,
  lookupQuery,
  organizationLoadList,
  organizationLoadQuery,
  queueList,
  reasonBody,
  requestIdParams,
  requiredReasonBody,
  resourceIdParams,
  revealedSchema,
  scheduleKeyParams,
  schedulePage,
  scheduleTriggered,
  workerList,
} from './schema.ts';
import { listWorkers } from './workers.ts';

const tag = 'Operations';
const jobPageOnly = z.object({ items: z.array(jobSchema), next_cursor: z.string().nullable() }).openapi('JobLookupPage');
const jobEnvelope = z.object({ job: jobSchema });
const oneJob = operatorOrRecordMember('job', 'jobs.manage');
const deleteJobQuery = z.object({ reason: z.string().trim().min(1).max(500).optional() }).strict();

/** `POST /ops/jobs/{job_id}/<verb>`: a command on one job, with an optional reason, answering the job as it now is (409 when its state forbids it). */
const jobCommand = (command: Command, op: { path: string; operationId: string; summary: string; description: string; answer: string }) =>
  defineRoute({
    method: 'post',
    path: op.path,
    operationId: op.operationId,
    tag,
    summary: op.summary,
    description: op.description,
    params: jobIdParams,
    body: reasonBody,
    authorize: oneJob,
    response: { status: 200, description: op.answer, schema: jobEnvelope },
    errors: [404, 409],
    handler: async ({ deps, actor, params, body }) => ({ job: (await commandJob(deps, actor, params.job_id, command, body.reason))! }),
  });

/**
 * The job console's API (issue 12): jobs, their history and commands, bulk actions, queue health,
 * pauses, workers, schedules, lookups, the tenant panel and the audit log. Operators see every
 * organization; an organization's owners and admins see their own. Every command is recorded in
 * the append-only audit log in its own transaction.
 */
export const operationsRoutes: AnyRoute[] = [
  defineRoute({
    method: 'get',
    path: '/ops/me',
    operationId: 'getConsoleIdentity',
    tag,
    summary: 'Which jobs the caller may see in the console: every organization’s (an operator) or those of the organizations where they hold jobs.manage',
    description:
      'The console page reads it at sign-in: an organization’s owner or admin lands on their organization’s own view (its jobs, runs and the pauses it may see) instead of the cross-organization one, which is for operators only.',
    authorize: signedIn('anyone signed in may ask what the console shows them'),
    response: { status: 200, description: 'The caller’s console identity', schema: consoleIdentitySchema },
    handler: ({ deps, actor }) => consoleIdentity(deps.db, actor),
  }),
  consoleRoute('query', {
    method: 'get',
    path: '/ops/jobs',
    operationId: 'listJobs',
    summary: 'Jobs by queue, state, organization, time window, resource id or request id, or only the stuck ones, newest first',
    description:
      'A time window on `created_on` bounds every list (default the last 24 hours, at most 31 days; with `stuck=true` the last 31 days); keyset paged; `total` is counted exactly up to 1,000 jobs (at any size with `count=exact`), beyond that an estimate marked `exact: false`. Payloads show sensitive fields redacted. A running job says how long its attempt has run against its kind’s expected time, and whether it is stuck (past it on a live worker). A query past the statement timeout answers 503.',
    query: listJobsQuery,
    response: { status: 200, description: 'A page of jobs', schema: jobPage },
    errors: [503],
    handler: ({ deps, caller, query }) => listJobsFor(deps, caller, query),
  }),
  defineRoute({
    method: 'get',
    path: '/ops/jobs/{job_id}',
    operationId: 'getJob',
    tag,
    summary: 'One job: payload, output or error, each attempt (worker, duration, error), its timeline and the operator actions on it',
    params: jobIdParams,
    authorize: oneJob,
    response: { status: 200, description: 'The job', schema: jobDetailSchema },
    errors: [404],
    handler: ({ deps, actor, params }) => jobDetail(deps, actor, params.job_id),
  }),
  jobCommand('retry', {
    path: '/ops/jobs/{job_id}/retry',
    operationId: 'retryJob',
    summary: 'Retry a failed job (one more attempt) or queue a cancelled one again',
    description: '409 for a job in any other state; nothing is recorded then.',
    answer: 'The job, queued again',
  }),
  jobCommand('retry_now', {
    path: '/ops/jobs/{job_id}/retry-now',
    operationId: 'retryJobNow',
    summary: 'Start now a job waiting out its retry backoff (or a delayed send), instead of at its `start_after`',
    description:
      'The job keeps its attempt count; a worker picks it up at once. 409 for a job that is not waiting for a later start, or that a pause holds back (resume the pause instead). Recorded in the audit log as `job.retry_now`.',
    answer: 'The job, due now',
  }),
  jobCommand('cancel', {
    path: '/ops/jobs/{job_id}/cancel',
    operationId: 'cancelJob',
    summary: 'Cancel a queued or running job',
    description:
      'A queued job is cancelled; a running one is cancelled and its handler’s abort signal fires (through NOTIFY, within a second), so it stops cooperatively. 409 for a finished job.',
    answer: 'The cancelled job',
  }),
  defineRoute({
    method: 'delete',
    path: '/ops/jobs/{job_id}',
    operationId: 'deleteJob',
    tag,
    summary: 'Delete a job that is not running',
    description: '409 for a running job (cancel it first). Its attempt history and the audit record stay.',
    params: jobIdParams,
    query: deleteJobQuery,
    authorize: oneJob,
    response: { status: 204, description: 'Deleted' },
    errors: [404, 409],
    handler: async ({ deps, actor, params, query }) => {
      await commandJob(deps, actor, params.job_id, 'delete', query.reason);
    },
  }),
  defineRoute({
    method: 'post',
    path: '/ops/jobs/{job_id}/reveal',
    operationId: 'revealJobPayload',
    tag,
    summary: 'The job’s payload with its sensitive fields, for operators; recorded in the audit log with the reason',
    params: jobIdParams,
    body: requiredReasonBody,
    authorize: operator('reveal sensitive job payloads'),
    response: { status: 200, description: 'The unredacted payload', schema: revealedSchema },
    errors: [403, 404],
    handler: async ({ deps, actor, params, body }) => revealPayload(deps, await consoleCaller(actor, undefined), params.job_id, body.reason),
  }),
  ...bulkActionRoutes,
  consoleRoute('query', {
    method: 'get',
    path: '/ops/queues',
    operationId: 'listQueues',
    summary: 'Queue health: counts by state, oldest waiting age, throughput per minute, live workers, stuck attempts, pauses and alerts',
    description:
      'Waiting and running jobs are counted live; finished ones over the last `hours`; throughput comes from the per-minute snapshot. Alerts: oldest ready job older than `OPS_ALERT_BACKLOG_AGE_SECONDS`, failed share of the last 15 minutes’ attempts above `OPS_ALERT_FAILURE_RATE`, no live worker for `OPS_ALERT_NO_WORKER_SECONDS`, attempts running past their kind’s expected time on a live worker (`stuck_attempts`, naming the longest-running job).',
    query: listQueuesQuery,
    response: { status: 200, description: 'Every queue', schema: queueList },
    errors: [503],
    handler: ({ deps, caller, query }) => queueHealth(deps, caller, { hours: query.hours, deadLetters: query.dead_letters, internal: query.internal }),
  }),
  consoleRoute('query', {
    method: 'get',
    path: '/ops/webhooks',
    operationId: 'getWebhookHealth',
    summary: 'Webhook deliveries beside the queues: backlog and failing endpoints',
    description:
      'Deliveries pending (queued or waiting for a retry) and the oldest one’s age; enabled endpoints whose last attempts failed, longest failing first, by host; how many endpoints the service disabled. Operators see every organization, or the one they name; owners and admins (`jobs.manage`) name theirs.',
    query: z.object({ organization_id: z.string().min(1).max(64).optional() }).strict(),
    response: { status: 200, description: 'Webhook delivery health', schema: webhookHealthSchema },
    handler: ({ deps, caller }) => webhookHealth(deps.db, caller.organizationId),
  }),
  ...pauseRoutes,
  defineRoute({
    method: 'get',
    path: '/ops/workers',
    operationId: 'listWorkers',
    tag,
    summary: 'Worker processes: host, pid, queues, concurrency, jobs in flight, last heartbeat; lost ones marked',
    description: 'A worker whose heartbeat is older than `WORKER_LOST_AFTER_SECONDS` is lost: the attempts it held are failed so pg-boss retries them.',
    query: listWorkersQuery,
    authorize: operator('see the worker processes'),
    response: { status: 200, description: 'The workers', schema: workerList },
    errors: [403],
    handler: ({ deps, query }) => listWorkers(deps, query.include_stopped),
  }),
  consoleRoute('query', {
    method: 'get',
    path: '/ops/schedules',
    operationId: 'listSchedules',
    summary: 'Every cron schedule — the platform’s own and the scheduled tasks — with last and next run and any pause',
    query: listSchedulesQuery,
    response: { status: 200, description: 'A page of schedules', schema: schedulePage },
    handler: ({ deps, caller, query }) => listSchedules(deps, caller, query),
  }),
  defineRoute({
    method: 'post',
    path: '/ops/schedules/{schedule_key}/trigger',
    operationId: 'triggerSchedule',
    tag,
    summary: 'Run a schedule now, even while it is paused',
    params: scheduleKeyParams,
    authorize: operatorOrRecordMember('schedule', 'jobs.manage'),
    response: { status: 202, description: 'The job sent, or the run created', schema: scheduleTriggered },
    errors: [404],
    handler: async ({ deps, actor, params }) => {
      const owner = await scheduleOwner(deps, params.schedule_key);
      return triggerSchedule(deps, await consoleCallerFor(actor, owner, 'schedule'), params.schedule_key, owner);
    },
  }),
  consoleRoute('query', {
    method: 'get',
    path: '/ops/lookups/requests/{request_id}',
    operationId: 'jobsOfRequest',
    summary: 'The jobs a request enqueued (its X-Request-Id), and the jobs those jobs sent',
    params: requestIdParams,
    query: lookupQuery,
    response: { status: 200, description: 'The jobs, newest first', schema: jobPageOnly },
    errors: [503],
    handler: ({ deps, caller, params, query }) => lookupJobs(deps, caller, { request_id: params.request_id }, query),
  }),
  consoleRoute('query', {
    method: 'get',
    path: '/ops/lookups/resources/{resource_id}',
    operationId: 'jobsOfResource',
    summary: 'The jobs that worked on a resource (an asset, a chat run, a metered call, a generation…)',
    description: 'Matches the payload fields each job type declares searchable (indexed).',
    params: resourceIdParams,
    query: lookupQuery,
    response: { status: 200, description: 'The jobs, newest first', schema: jobPageOnly },
    errors: [503],
    handler: ({ deps, caller, params, query }) => lookupJobs(deps, caller, { resource_id: params.resource_id }, query),
  }),
  consoleRoute('query', {
    method: 'get',
    path: '/ops/organizations',
    operationId: 'listOrganizationJobLoad',
    summary: 'Each organization’s running and waiting jobs against its concurrency limit, noisiest first',
    query: organizationLoadQuery,
    response: { status: 200, description: 'The organizations with work', schema: organizationLoadList },
    errors: [503],
    handler: ({ deps, caller, query }) => organizationLoad(deps, caller, query.limit),
  }),
  consoleRoute('query', {
    method: 'get',
    path: '/ops/audit-log',
    operationId: 'listOperatorActions',
    summary: 'The append-only log of operator actions: who, role, organization, action, filter or ids, count, reason, request id',
    description:
      'Operators see every entry. An organization’s owners and admins see the entries about their organization, except operators’ `pause.create` and `pause.resume` (who paused their work and why are the operators’; the pause itself, with since when, is in `GET /ops/pauses`).',
    query: auditQuery,
    response: { status: 200, description: 'A page of actions, newest first', schema: auditPage },
    handler: async ({ deps, caller, query }) => {
      const filter = { organizationId: caller.organizationId, jobId: query.job_id, action: query.action, operator: caller.operator };
      return presentPage(await listActions(deps.db, filter, query), presentAction);
    },
  }),
];
