import { z } from '../core/zod.ts';
import { defineJob } from '../jobs/define.ts';

/** Every minute: fire the due slots of every scheduled task (./dispatcher.ts). */
export const dispatchScheduledTasksJob = defineJob({
  name: 'scheduled-tasks.dispatch',
  version: 1,
  payload: z.object({}).strict(),
  policy: { retryLimit: 1, retryDelaySeconds: 10, expireInSeconds: 120, deleteAfterSeconds: 3600 },
  cron: '* * * * *',
  handler: () => import('./handlers.ts').then((m) => m.dispatchScheduledTasks),
});

const runPayload = z.object({ run_id: z.string().uuid() });
export type ScheduledTaskRunPayload = z.output<typeof runPayload>;

/**
 * One run: a conversation of its own, the prompt, a chat run (the conversations machinery holds,
 * streams and captures, capped by the task's max_credits_per_run); then the run's end and the
 * answer e-mailed to its recipients. Each step records what it made, so a retry reuses it.
 */
export const scheduledTaskRunJob = defineJob({
  name: 'scheduled-tasks.run',
  version: 1,
  payload: runPayload,
  searchable: ['run_id'],
  policy: { retryLimit: 2, retryDelaySeconds: 5, expireInSeconds: 30 * 60 },
  handler: () => import('./handlers.ts').then((m) => m.runScheduledTask),
});

const emailPayload = z.object({ run_id: z.string().uuid(), user_id: z.string().min(1) });
export type ScheduledTaskEmailPayload = z.output<typeof emailPayload>;

/** The answer of one run to one recipient (the provider dedupes on run and recipient). */
export const scheduledTaskEmailJob = defineJob({
  name: 'scheduled-tasks.email',
  version: 1,
  payload: emailPayload,
  searchable: ['run_id', 'user_id'],
  handler: () => import('./handlers.ts').then((m) => m.emailRunAnswer),
});
