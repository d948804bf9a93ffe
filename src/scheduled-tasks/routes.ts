import { accessRecordRoute } from '../http/access-record-route.ts';
import { resource } from '../http/authorize.ts';
import { type AnyRoute, defineRoute } from '../http/route.ts';
import { resourceRoutes } from '../http/resource-routes.ts';
import { presentScheduledTask, type ScheduledTaskRow } from './presenter.ts';
import {
  createScheduledTaskBody,
  emailRecipientsSchema,
  listScheduledTasksQuery,
  scheduledTaskIdParams,
  scheduledTaskPage,
  scheduledTaskSchema,
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
const task = resourceRoutes({
  type: 'scheduled_task',
  tag,
  path: '/scheduled-tasks',
  idParams: scheduledTaskIdParams,
  noun: 'scheduled task',
  schema: scheduledTaskSchema,
  present: (row: ScheduledTaskRow) => presentScheduledTask(row),
});

/** Scheduled tasks (spec §4.11): the resource. Runs, triggers and the dispatcher come with the rest of issue 11. */
export const scheduledTaskRoutes: AnyRoute[] = [
  task.create({
    path: '/scheduled-tasks',
    operationId: 'createScheduledTask',
    summary: 'Create a scheduled task: a prompt run by a chat model on a cron schedule',
    description:
      'The cron (five fields) and the IANA timezone are validated (400 naming `schedule.cron` or `schedule.timezone`); a schedule firing more often than SCHEDULED_TASK_MIN_INTERVAL_SECONDS (5 minutes by default), including around daylight-saving changes, is refused. The answer shows `next_run_at` and the next five runs in the task’s timezone. `email_recipients` must be members of the organization, `model` available to it, `skill_id` readable, `project_id` editable (400 naming the field). The caller owns it; needs `resources.create`.',
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
    description: 'A new schedule or `enabled: true` recomputes `next_run_at` from now; `enabled: false` clears it at once, so no further slot fires.',
    body: updateScheduledTaskBody,
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
  defineRoute({
    method: 'get',
    path: '/scheduled-tasks/{scheduled_task_id}/runs/email-recipients',
    operationId: 'listScheduledTaskEmailRecipients',
    tag,
    summary: 'Who gets each run’s answer by e-mail',
    description: 'The task’s recipients who are still members of the organization, with their e-mail and name. Read access is enough.',
    params: scheduledTaskIdParams,
    response: { status: 200, description: 'The recipients', schema: emailRecipientsSchema },
    errors: [404],
    authorize: resource('scheduled_task', 'read', 'scheduled_task_id'),
    handler: async ({ params, actor, deps }) => taskRecipients(deps, actor, params.scheduled_task_id),
  }),
  accessRecordRoute({
    type: 'scheduled_task',
    path: '/scheduled-tasks/{scheduled_task_id}/access',
    idParams: scheduledTaskIdParams,
    noun: 'scheduled task',
    operationId: 'getScheduledTaskAccess',
    tag,
  }),
];
