import { pageOf, pageQuery } from '../core/pagination.ts';
import { CHECKED_BY_SERVER, queryBoolean, timestamp, uuid, z } from '../core/zod.ts';
import { actionableStates } from './bulk-model.ts';
import { jobErrorRecordSchema } from '../jobs/error-record.ts';
import { organizationId, queueName, reason, scheduleKey } from './fields.ts';
import { pauseView } from './pause-schema.ts';

// The job console's contract (tag "Operations"): requests and answers of /ops/*. Operators see every
// organization; an organization's owners and admins (`jobs.manage`) see their own by naming it in
// `organization_id`.

export const jobStates = ['created', 'retry', 'active', 'completed', 'cancelled', 'failed'] as const;
export const jobStateSchema = z.enum(jobStates).openapi('JobState', {
  description:
    'pg-boss job state: `created` (queued), `retry` (waiting for its next attempt), `active`, `completed`, `cancelled`, `failed` (retries exhausted).',
});

/** How lists over the job table stay fast at millions of rows: a time window (default the last 24 hours, at most 31 days). */
const window = {
  from: timestamp.optional().openapi({ description: 'Jobs created at or after this time; default 24 hours before `to`.' }),
  to: timestamp.optional().openapi({ description: 'Jobs created before this time; default now. The window may span at most 31 days.' }),
};

export const organizationScopeQuery = z
  .object({ organization_id: organizationId.optional().openapi({ description: 'Only this organization (required unless the caller is an operator).' }) })
  .strict();

export const jobFilter = z
  .object({
    queue: queueName.optional(),
    state: jobStateSchema.optional(),
    organization_id: organizationId.optional().openapi({ description: 'Only jobs of this organization (required unless the caller is an operator).' }),
    ...window,
    resource_id: z
      .string()
      .min(1)
      .max(200)
      .optional()
      .openapi({ description: 'Only jobs whose payload names this id in a field its job type declares searchable (asset_id, run_id, call_id, …).' }),
    request_id: z.string().min(1).max(128).optional().openapi({ description: 'Only jobs enqueued by this request (X-Request-Id).' }),
    origin: z.enum(['work', 'cron', 'internal', 'all']).optional().openapi({
      description:
        '`work`: jobs the platform’s work sent (not pg-boss’s internal `__pgboss__*` queues, not the platform’s cron jobs); `cron`: jobs the platform’s cron schedules sent; `internal`: pg-boss’s own queues; `all`. Default `work`, or `all` when `queue`, `request_id`, `resource_id` or `stuck` names what to look for.',
    }),
  })
  .strict();
export type JobFilter = z.output<typeof jobFilter>;

export const listJobsQuery = jobFilter
  .extend({
    ...pageQuery,
    stuck: queryBoolean.optional().openapi({
      description:
        '`true`: only stuck attempts — jobs running longer than their kind’s expected time (`expected_seconds`) on a live worker. The default window is then the last 31 days (running jobs are few; the console’s active-jobs index finds them).',
    }),
    count: z.enum(['estimated', 'exact']).default('estimated').openapi({
      description:
        'How `total` is counted: `estimated` (counted exactly up to 1,000 matching jobs, estimated beyond and said so: see `total`) or `exact` (a real count at any size, bounded by the statement timeout).',
    }),
  })
  .strict();

export const jobIdParams = z.object({ job_id: uuid }).strict();

export const attemptSchema = z
  .object({
    attempt: z.number().int().describe('pg-boss retry count when the attempt began'),
    worker_id: uuid.nullable(),
    started_at: timestamp,
    ended_at: timestamp.nullable().describe('null while running'),
    duration_ms: z.number().int().nullable(),
    outcome: z
      .enum(['running', 'completed', 'failed', 'deferred', 'lost', 'cancelled', 'superseded'])
      .describe('superseded: the attempt lost its lease (its job was canceled, expired or retried elsewhere while it ran) and wrote nothing'),
    error: jobErrorRecordSchema.nullable(),
  })
  .openapi('JobAttempt');

export const jobSchema = z
  .object({
    id: uuid,
    queue: z.string(),
    state: jobStateSchema,
    organization_id: z.string().nullable().describe('The organization the job works for; null for the platform’s own jobs'),
    request_id: z.string().nullable().describe('The request that enqueued the job (and, for jobs sent by jobs, the request behind those)'),
    payload: z
      .record(z.string(), z.unknown())
      .describe('Fields a job type marks sensitive read "[redacted]" unless the caller is an operator who revealed them'),
    redacted: z.array(z.string()).describe('Payload fields redacted in this answer'),
    output: z.unknown().nullable().describe('The completion result, or the last failure (a JobErrorRecord: redacted, without stack)'),
    attempts: z.number().int().describe('Attempts started (pg-boss retry count, plus one once started)'),
    retry_limit: z.number().int(),
    priority: z.number().int(),
    created_at: timestamp,
    start_after: timestamp,
    started_at: timestamp.nullable(),
    completed_at: timestamp.nullable(),
    dead_letter: z.string().nullable().describe('Where the job goes when its retries are exhausted'),
    source: z.object({ queue: z.string(), job_id: uuid }).nullable().describe('For a job in a dead-letter queue: the queue and job it failed on'),
    stuck: z
      .boolean()
      .describe(
        'Running longer than its kind’s expected time (`expected_seconds`) while a live worker (heartbeat within `WORKER_LOST_AFTER_SECONDS`) holds it. An attempt of a dead worker is not stuck: it is lost and retried.',
      ),
    running_for_seconds: z.number().nullable().describe('How long the current attempt has been running; null unless the job is running'),
    expected_seconds: z
      .number()
      .nullable()
      .describe('How long an attempt of this job kind usually takes (its `expectedSeconds`); null unless the job is running'),
  })
  .openapi('Job');

export const jobPage = pageOf(jobSchema)
  .extend({
    total: z
      .object({
        value: z.number().int(),
        exact: z.boolean().describe('`true`: counted; `false`: an estimate (more than 1,000 matching jobs and `count` not `exact`)'),
        at_least: z.number().int().nullable().describe('For an estimate: how many were counted (the value is never below it)'),
        basis: z
          .enum(['counted', 'planner', 'extrapolated'])
          .describe(
            '`counted`; `planner`: the query planner’s row estimate; `extrapolated`: the newest 1,001 jobs’ density over the window, at most the planner’s estimate plus the rows changed since the job table was last analyzed (when the planner’s estimate is below what was counted: statistics older than the jobs)',
          ),
      })
      .describe('Jobs matching the filter: counted up to 1,000 (or at any size with `count=exact`), estimated beyond'),
    window: z.object({ from: timestamp, to: timestamp }),
  })
  .openapi('JobPage');

export const operatorActionSchema = z
  .object({
    id: z.string().describe('Position in the append-only log'),
    at: timestamp,
    actor_id: z.string(),
    actor_role: z.string().describe('`operator`, or the organization role an owner or admin acted with'),
    organization_id: z.string().nullable(),
    action: z.string().describe('e.g. job.retry, job.cancel, job.delete, job.reveal, bulk.create, bulk.abort, pause.create, pause.resume, schedule.trigger'),
    target: z.record(z.string(), z.unknown()).describe('The filter, ids, pause or schedule acted on'),
    job_ids: z.array(uuid),
    bulk_action_id: uuid.nullable(),
    count: z.number().int(),
    reason: z.string().nullable(),
    request_id: z.string().nullable(),
  })
  .openapi('OperatorAction');

export const timelineEventSchema = z
  .object({
    at: timestamp,
    event: z.enum(['created', 'attempt_started', 'attempt_ended', 'retry_scheduled', 'completed', 'failed', 'cancelled', 'operator_action']),
    detail: z.string(),
  })
  .openapi('JobTimelineEvent');

export const jobDetailSchema = z
  .object({
    job: jobSchema,
    history: z.array(attemptSchema).describe('Each attempt, oldest first: worker, duration, outcome, error'),
    timeline: z.array(timelineEventSchema).describe('Created, each attempt, retries, completion and operator actions, in time order'),
    actions: z.array(operatorActionSchema).describe('Operator actions on this job, newest first'),
  })
  .openapi('JobDetail');

export const reasonBody = z.object({ reason: reason.optional() }).strict();
export const requiredReasonBody = z.object({ reason }).strict();

export const revealedSchema = z.object({ job_id: uuid, payload: z.record(z.string(), z.unknown()) }).openapi('RevealedPayload');

// Bulk actions

export const bulkActionKinds = ['retry', 'cancel', 'redrive', 'delete'] as const;

/** The states each action applies to, declared: a `filter.state` outside them is 400. */
const statesOfActions = {
  oneOf: bulkActionKinds.map((action) => ({
    required: ['action'],
    properties: { action: { const: action }, filter: { properties: { state: { enum: [...actionableStates[action]] } } } },
  })),
};

export const bulkRequest = z
  .object({
    action: z
      .enum(bulkActionKinds)
      .describe(
        '`retry` failed or cancelled jobs, `cancel` queued or running ones, `redrive` dead letters back to their queue, `delete` jobs that are not running (their attempt history and the audit record stay)',
      ),
    filter: jobFilter
      .describe(
        'Which jobs; a redrive filters a dead-letter queue (`queue` = `….dead`) or, by default, every dead-letter queue. A filter that matches no job the action applies to is 400 naming it.',
      )
      .openapi({ [CHECKED_BY_SERVER]: true }),
  })
  .strict()
  .openapi(statesOfActions);

export const createBulkActionBody = bulkRequest.extend({ reason }).strict().openapi(statesOfActions);

export const bulkPreviewSchema = z
  .object({
    action: z.enum(bulkActionKinds),
    count: z.number().int().describe('Jobs the action would snapshot now (exact)'),
    by_queue: z.array(z.object({ queue: z.string(), count: z.number().int() })),
    sample: z.array(jobSchema).describe('Up to 10 of them, newest first'),
    limit: z.number().int().describe('A bulk action takes at most this many jobs'),
  })
  .openapi('BulkActionPreview');

export const bulkActionSchema = z
  .object({
    id: uuid,
    action: z.enum(bulkActionKinds),
    filter: z.record(z.string(), z.unknown()),
    organization_id: z.string().nullable(),
    state: z.enum(['running', 'completed', 'aborted']),
    total: z.number().int().describe('Jobs snapshotted when the action was created'),
    done: z.number().int(),
    skipped: z.number().int(),
    skipped_reasons: z.array(z.object({ reason: z.string(), count: z.number().int() })).describe('Why jobs were skipped (e.g. no longer failed)'),
    reason: z.string().nullable(),
    created_by: z.string(),
    created_at: timestamp,
    abort_requested_at: timestamp.nullable(),
    finished_at: timestamp.nullable(),
  })
  .openapi('BulkAction');

export const bulkActionIdParams = z.object({ bulk_action_id: uuid }).strict();
export const listBulkActionsQuery = z.object({ organization_id: organizationId.optional(), ...pageQuery }).strict();
export const bulkActionPage = pageOf(bulkActionSchema).openapi('BulkActionPage');

// Queues

export const alertSchema = z
  .object({
    kind: z
      .enum(['backlog_age', 'failure_rate', 'no_live_worker', 'stuck_attempts'])
      .describe('`stuck_attempts`: attempts running past their kind’s expected time on a live worker (value: how many; threshold 0)'),
    message: z.string(),
    value: z.number(),
    threshold: z.number(),
    job_id: uuid.nullable().describe('For `stuck_attempts`: the job stuck the longest; null for the other kinds'),
  })
  .openapi('QueueAlert');

export const queueSchema = z
  .object({
    name: z.string(),
    dead_letter: z.string().nullable(),
    counts: z
      .object({
        created: z.number().int(),
        retry: z.number().int(),
        active: z.number().int(),
        completed: z.number().int(),
        cancelled: z.number().int(),
        failed: z.number().int(),
        deferred: z.number().int().describe('Queued jobs not yet due (start_after in the future: retries, pauses)'),
      })
      .describe(
        'Jobs by state (for `organization_id`: that organization’s), true now: waiting and running ones counted live, finished ones created in the last `hours`',
      ),
    internal: z.boolean().describe('One of pg-boss’s own queues (`__pgboss__*`): listed only with `internal=true`, never alerting'),
    stats: z
      .object({
        queued: z.number().int().describe('Waiting or retrying, deferred ones included'),
        deferred: z.number().int(),
        active: z.number().int(),
        failed: z.number().int(),
        total: z.number().int().describe('Every job of the queue still in the table, whatever its age'),
        counted_at: timestamp.nullable().describe('When pg-boss last counted (its monitor pass, every `WORKER_SUPERVISE_INTERVAL_SECONDS`)'),
      })
      .nullable()
      .describe('pg-boss’s own counts of the whole queue, all time, as of `counted_at`; null in an organization’s view (they are not per organization)'),
    oldest_ready_seconds: z.number().nullable().describe('Age of the oldest job that is due and waiting'),
    throughput: z
      .array(z.object({ minute: timestamp, created: z.number().int(), completed: z.number().int(), failed: z.number().int() }))
      .describe('Per minute over the last `hours`, oldest first (from the periodic snapshot)'),
    live_workers: z.number().int(),
    stuck_attempts: z
      .number()
      .int()
      .describe('Attempts running past the kind’s expected time on a live worker now (for `organization_id`: that organization’s)'),
    pauses: z.array(pauseView).describe('Pauses in force on this queue (for an organization: the service-wide ones and its own, as `OrganizationPause`)'),
    alerts: z.array(alertSchema),
  })
  .openapi('Queue');

export const listQueuesQuery = z
  .object({
    organization_id: organizationId.optional().openapi({ description: 'Counts and throughput of this organization only (required unless operator).' }),
    hours: z.coerce.number().int().min(1).max(48).default(1).openapi({ description: 'Throughput history to return, 1–48 hours.' }),
    dead_letters: queryBoolean.default(false).openapi({ description: 'Include the dead-letter queues.' }),
    internal: queryBoolean.default(false).openapi({ description: 'Include pg-boss’s internal queues (`__pgboss__*`; they never alert).' }),
  })
  .strict();
export const queueList = z.object({ items: z.array(queueSchema), alerts: z.array(alertSchema.extend({ queue: z.string() })) }).openapi('QueueList');

// Workers

export const workerSchema = z
  .object({
    id: uuid,
    host: z.string(),
    pid: z.number().int(),
    version: z.string(),
    queues: z.array(z.string()),
    concurrency: z.number().int().describe('Jobs at once per queue'),
    jobs_in_flight: z.number().int(),
    in_flight: z.array(z.object({ job_id: uuid, queue: z.string(), attempt: z.number().int(), organization_id: z.string().nullable(), started_at: timestamp })),
    status: z.enum(['live', 'lost', 'stopped']),
    started_at: timestamp,
    last_heartbeat_at: timestamp,
    stopped_at: timestamp.nullable(),
    lost_at: timestamp.nullable(),
  })
  .openapi('Worker');
export const listWorkersQuery = z
  .object({ include_stopped: queryBoolean.default(false).openapi({ description: 'Also workers that stopped or were lost in the last 24 hours.' }) })
  .strict();
export const workerList = z.object({ items: z.array(workerSchema) }).openapi('WorkerList');

// Schedules

export const scheduleSchema = z
  .object({
    key: z.string().describe('`cron:<queue>` (the platform’s own) or `task:<scheduled task id>`'),
    kind: z.enum(['platform', 'scheduled_task']),
    queue: z.string(),
    organization_id: z.string().nullable(),
    title: z.string(),
    cron: z.string(),
    timezone: z.string(),
    enabled: z.boolean(),
    last_run_at: timestamp.nullable(),
    next_run_at: timestamp.nullable(),
    paused: pauseView.nullable(),
  })
  .openapi('Schedule');
export const listSchedulesQuery = z.object({ organization_id: organizationId.optional(), ...pageQuery }).strict();
export const schedulePage = pageOf(scheduleSchema).openapi('SchedulePage');
export const scheduleKeyParams = z
  .object({
    schedule_key: scheduleKey,
  })
  .strict();
export const scheduleTriggered = z
  .object({ schedule: z.string(), job_id: uuid.nullable(), run_id: uuid.nullable().describe('For a scheduled task: the run created') })
  .openapi('ScheduleTriggered');

// Lookups, organizations, audit log

export const requestIdParams = z.object({ request_id: z.string().min(1).max(128) }).strict();
export const resourceIdParams = z.object({ resource_id: z.string().min(1).max(200) }).strict();
export const lookupQuery = organizationScopeQuery.extend({ ...pageQuery }).strict();

export const organizationLoadSchema = z
  .object({
    organization_id: z.string(),
    name: z.string().nullable(),
    active: z.number().int(),
    queued: z.number().int(),
    failed_last_hour: z.number().int(),
    concurrency_limit: z.number().int().nullable().describe('What it may run at once on its busiest queue (that queue’s `limit`)'),
    capped: z.boolean().describe('On some queue it runs all it may while more of its jobs wait: the fairness limit is holding it back'),
    queues: z.array(
      z.object({
        queue: z.string(),
        active: z.number().int(),
        queued: z.number().int(),
        limit: z
          .number()
          .int()
          .nullable()
          .describe(
            'Jobs of this organization that may run at once on the queue: `JOB_ORGANIZATION_CONCURRENCY` when set; null otherwise (the fleet’s slots, shared by weight)',
          ),
        fleet_slots: z.number().int().describe('Slots of the live workers serving the queue (all organizations together)'),
        capped: z.boolean().describe('`active` has reached `limit` while jobs of the organization wait'),
      }),
    ),
  })
  .openapi('OrganizationJobLoad');
export const organizationLoadQuery = z
  .object({ organization_id: organizationId.optional(), limit: z.coerce.number().int().min(1).max(100).default(20) })
  .strict();
export const organizationLoadList = z
  .object({
    fairness: z
      .object({
        mode: z
          .enum(['weighted', 'fixed'])
          .describe(
            '`weighted`: each fetch takes the next job of the organization with the least in flight on the queue for its weight (default 1), so one organization alone may use every slot and several share them by weight; `fixed`: the same, with at most `JOB_ORGANIZATION_CONCURRENCY` jobs per organization and queue across all workers',
          ),
        share: z.number().nullable().describe('Always null: the per-worker share (JOB_ORGANIZATION_SHARE) is gone'),
        per_worker: z.number().int().nullable().describe('Always null: the per-worker share (JOB_ORGANIZATION_SHARE) is gone'),
        fixed_limit: z.number().int().nullable(),
      })
      .describe('The rule in force (this process’s configuration; each worker records the share it enforces)'),
    items: z.array(organizationLoadSchema).describe('Noisiest first (active, then queued)'),
  })
  .openapi('OrganizationJobLoadList');

export const auditQuery = z
  .object({
    organization_id: organizationId.optional(),
    job_id: uuid.optional(),
    action: z.string().min(1).max(64).optional(),
    ...pageQuery,
  })
  .strict();
export const auditPage = pageOf(operatorActionSchema).openapi('OperatorActionPage');

export const consoleIdentitySchema = z
  .object({
    user_id: z.string(),
    operator: z.boolean().describe('An operator of the service: every organization’s jobs'),
    organizations: z
      .array(z.object({ id: z.string(), name: z.string(), role: z.string() }))
      .describe('The organizations where the caller holds `jobs.manage` (their own view), oldest membership first; at most 100'),
  })
  .openapi('ConsoleIdentity');
