import { presentPage } from '../core/pagination.ts';
import { accessRecordRoute } from '../http/access-record-route.ts';
import { listing, raised, resourceRole } from '../http/authorize.ts';
import { z } from '../core/zod.ts';
import { type AnyRoute, defineRoute } from '../http/route.ts';
import { resourceRoutes } from '../http/resource-routes.ts';
import { scheduledTaskResource } from './resource.ts';
import { presentScheduledTask, type ScheduledTaskRow } from './presenter.ts';
import { cancelRuns, listRuns, startRunNow } from './run-service.ts';
import { presentRun } from './runs.ts';
import {
  createScheduledTaskBody,
  listRunsQuery,
  oneOffRunBody,
  runEnvelope,
  runPage,
  emailRecipientsSchema,
  listScheduledTasksQuery,
  scheduledTaskIdParams,
  scheduledTaskPage,
  updateScheduledTaskBody,
} from './schema.ts';
import {
  createScheduledTask,
  deleteScheduledTask,
  getScheduledTask,
  listScheduledTasks,
  restoreScheduledTask,
  taskRecipients,
  updateScheduledTask,
} from './service.ts';

const tag = 'Scheduled tasks';
const task = resourceRoutes(scheduledTaskResource);

const runBehaviour =
  'A run opens a conversation of its own (`schedule_id` = the task) with the prompt and performs one chat run there (the task’s model and skill; a credit hold of `max_credits_per_run`, else the default hold of the turn), then mails the answer and a link to the conversation to the recipients who are still members and can read the task when it is sent. The run acts as, and is charged to, the caller who triggers it (their access and spending limit apply); scheduled slots and the job console’s trigger act as the task’s creator. 402 `payment_required` (`data.issues[0].path` `["spending_limit"]` or `["balance"]`) when the caller could not hold the run’s credits now, and nothing is queued; credits gone by the time the run starts → `skipped` with the reason.';

/** Scheduled tasks (spec §4.11): the resource, its runs, triggers and cancellation. The dispatcher fires the slots (src/scheduled-tasks/dispatcher.ts). */
export const scheduledTaskRoutes: AnyRoute[] = [
  task.create({
    path: '/scheduled-tasks',
    operationId: 'createScheduledTask',
    summary: 'Create a scheduled task: a prompt run by a chat model on a cron schedule',
    description:
      'The cron (five fields) and the IANA timezone are validated (400 naming `schedule.cron` or `schedule.timezone`); a schedule whose runs ever come closer together than SCHEDULED_TASK_MIN_INTERVAL_SECONDS (5 minutes by default) is refused, naming where: the smallest gap is computed from the cron’s fields over a whole calendar cycle (month ends, 29 February, weekdays) in the task’s timezone, and around its daylight-saving changes. The answer shows `next_run_at` and the next five runs in the task’s timezone. `email_recipients` must be members of the organization who can read the task as created (its visibility, project), `model` available to it, `skill_id` readable, `project_id` editable (400 naming the field). The caller owns it; needs `resources.create`.',
    body: createScheduledTaskBody,
    run: createScheduledTask,
  }),
  task.list({
    path: '/scheduled-tasks',
    operationId: 'listScheduledTasks',
    summary: 'Scheduled tasks of an organization the caller can read, newest first',
    description: 'Keyset paged. A caller who is not a member of the organization gets an empty page.',
    query: listScheduledTasksQuery,
    page: scheduledTaskPage,
    run: listScheduledTasks,
    presentItem: (row: ScheduledTaskRow) => presentScheduledTask(row),
  }),
  task.get({ path: '/scheduled-tasks/{scheduled_task_id}', operationId: 'getScheduledTask', summary: 'Get a scheduled task', run: getScheduledTask }),
  task.update({
    path: '/scheduled-tasks/{scheduled_task_id}',
    operationId: 'updateScheduledTask',
    summary: 'Change a scheduled task (editors)',
    description:
      'A new schedule or `enabled: true` recomputes `next_run_at` from now; `enabled: false` clears it at once, so no further slot fires. `email_recipients` must be members who can read the task (400 naming the field). Raising `max_credits_per_run` above its effective value (null: the default hold of a run — the skill and prompt at the model’s prices with its `max_tokens`, as the creator’s scheduled slots hold it) needs the task’s owner or an organization owner/admin: 403 for an editor; lowering it is any editor’s.',
    body: updateScheduledTaskBody,
    fields: { max_credits_per_run: raised(resourceRole('scheduled_task', 'owner', 'scheduled_task_id')) },
    run: updateScheduledTask,
  }),
  task.remove({
    path: '/scheduled-tasks/{scheduled_task_id}',
    operationId: 'deleteScheduledTask',
    summary: 'Delete a scheduled task (owners; soft delete, restorable): no slot fires after it',
    run: deleteScheduledTask,
  }),
  task.restore({
    path: '/scheduled-tasks/{scheduled_task_id}/restore',
    operationId: 'restoreScheduledTask',
    summary: 'Restore a deleted scheduled task (owners); it resumes from the next slot',
    run: restoreScheduledTask,
  }),
  task.on('read', {
    method: 'get',
    path: '/scheduled-tasks/{scheduled_task_id}/runs/email-recipients',
    operationId: 'listScheduledTaskEmailRecipients',
    summary: 'Who gets each run’s answer by e-mail',
    description: 'The task’s recipients who are still members of the organization, with their e-mail and name. Read access is enough.',
    params: scheduledTaskIdParams,
    response: { status: 200, description: 'The recipients', schema: emailRecipientsSchema },
    handler: async ({ params, actor, deps }) => taskRecipients(deps, actor, params.scheduled_task_id),
  }),
  task.on('edit', {
    method: 'post',
    path: '/scheduled-tasks/{scheduled_task_id}/trigger',
    operationId: 'triggerScheduledTask',
    idempotent: {},
    summary: 'Run the task now with its saved settings (editors)',
    description: `202 with the queued run (\`trigger: manual\`, \`status: queued\`): accepted, it runs on a worker; follow it with \`GET /scheduled-task-runs?task_id=\`. The schedule is unchanged. ${runBehaviour}`,
    params: scheduledTaskIdParams,
    response: { status: 202, description: 'The queued run', schema: runEnvelope },
    errors: [402, 409],
    handler: async ({ params, actor, deps }) => ({ run: presentRun(await startRunNow(deps, actor, params.scheduled_task_id)) }),
  }),
  task.on('edit', {
    method: 'post',
    path: '/scheduled-tasks/{scheduled_task_id}/runs',
    operationId: 'startScheduledTaskRun',
    idempotent: {},
    summary: 'Start a one-off run with overrides (editors)',
    description: `Prompt, model and recipients may differ from the task’s (checked like the task’s own, recipients able to read the task: 400 naming the field). 201 with the queued run (\`trigger: one_off\`). ${runBehaviour}`,
    params: scheduledTaskIdParams,
    body: oneOffRunBody,
    response: { status: 201, description: 'The queued run', schema: runEnvelope },
    errors: [402, 409],
    handler: async ({ params, body, actor, deps }) => ({ run: presentRun(await startRunNow(deps, actor, params.scheduled_task_id, body)) }),
  }),
  task.on('edit', {
    method: 'post',
    path: '/scheduled-tasks/{scheduled_task_id}/runs/cancel',
    operationId: 'cancelScheduledTaskRuns',
    summary: 'Cancel the task’s queued and running runs (editors)',
    description:
      'Queued runs never start; a running run’s chat run is stopped within a second and charged only what it used (`credits_used` on the run). Answers how many runs were canceled.',
    params: scheduledTaskIdParams,
    response: { status: 200, description: 'How many runs were canceled', schema: z.object({ canceled: z.number().int() }) },
    errors: [409],
    handler: async ({ params, actor, deps }) => cancelRuns(deps, actor, params.scheduled_task_id),
  }),
  defineRoute({
    method: 'get',
    path: '/scheduled-task-runs',
    operationId: 'listScheduledTaskRuns',
    tag,
    summary: 'Runs of the scheduled tasks the caller can read',
    description:
      'Newest first, keyset paged; filter by task, status and the slot’s time (`from` inclusive, `to` exclusive). Each run says when it was scheduled for, when it started and ended, the credits it used, its conversation and its error.',
    query: listRunsQuery,
    response: { status: 200, description: 'A page of runs', schema: runPage },
    authorize: listing('query'),
    handler: async ({ query, actor, deps }) => presentPage(await listRuns(deps, actor, query), presentRun),
  }),
  accessRecordRoute(scheduledTaskResource, { path: '/scheduled-tasks/{scheduled_task_id}/access', operationId: 'getScheduledTaskAccess' }),
];
