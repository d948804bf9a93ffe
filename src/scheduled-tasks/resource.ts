import { defineResourceType } from '../access/index.ts';
import { presentScheduledTask, type ScheduledTaskRow } from './presenter.ts';
import { scheduledTaskEnvelope, scheduledTaskIdParams } from './schema.ts';

declare module '../access/index.ts' {
  interface ResourceTypeNames {
    scheduled_task: true;
  }
}

/** A scheduled task: the project it names passes its audience on (as a chat passes its own to the assets made in it). */
export const scheduledTaskResource = defineResourceType<ScheduledTaskRow>({
  type: 'scheduled_task',
  table: 'scheduled_tasks',
  noun: 'scheduled task',
  activity: 'scheduled_task',
  titleColumn: 'title',
  origins: [{ column: 'project_id', from: 'project' }],
  api: {
    path: '/scheduled-tasks',
    idParams: scheduledTaskIdParams,
    tag: 'Scheduled tasks',
    // Answered wrapped (`{scheduled_task}`, CONVENTIONS §4); lists show the items bare.
    schema: scheduledTaskEnvelope,
    present: (row) => ({ scheduled_task: presentScheduledTask(row) }),
  },
});
