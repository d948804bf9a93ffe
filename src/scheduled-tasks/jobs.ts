import { z } from '../core/zod.ts';
import { defineJob, type PayloadOf } from '../jobs/define.ts';

/** Every minute: fire the due slots of every scheduled task (./dispatcher.ts). */
export const dispatchScheduledTasksJob = defineJob({
  name: 'scheduled-tasks.dispatch',
  version: 1,
  nature: 'computes',
  payload: z.object({}).strict(),
  policy: { retryLimit: 1, retryDelaySeconds: 10, expireInSeconds: 120, deleteAfterSeconds: 3600 },
  cron: '* * * * *',
});

/** A run's payload: its id (the run row holds the rest). */
const runPayload = z.object({ run_id: z.string().uuid() });

/**
 * One run starts: a conversation of its own, the prompt and a chat run (the conversations
 * machinery holds, streams and captures, capped by the task's max_credits_per_run), written in one
 * step, so a retry after a crash at any line does each thing once. Then this job ends: the chat
 * run's end sends `scheduledTaskFinishJob`, which ends the run — no worker slot waits on the turn.
 */
export const scheduledTaskRunJob = defineJob({
  name: 'scheduled-tasks.run',
  version: 1,
  nature: 'waits',
  payload: runPayload,
  searchable: ['run_id'],
  policy: { retryLimit: 2, retryDelaySeconds: 5, expireInSeconds: 5 * 60 },
  expectedSeconds: 10,
});
export type ScheduledTaskRunPayload = PayloadOf<typeof scheduledTaskRunJob>;

/**
 * The dispatcher's batch of runs (one per task due at the slot) starts at once, as `scheduledTaskRunJob`
 * starts one, in one step and a few statements for the whole batch (./start.ts): a minute with
 * thousands of due tasks starts them in as many jobs as batches, not one job each. A run the batch
 * cannot start (the creator's access, the skill, the model) fails alone, saying why.
 */
export const scheduledTaskStartJob = defineJob({
  name: 'scheduled-tasks.start-runs',
  version: 1,
  nature: 'computes',
  payload: z.object({ run_ids: z.array(z.string().uuid()).min(1).max(200) }),
  policy: { retryLimit: 2, retryDelaySeconds: 5, expireInSeconds: 5 * 60 },
  expectedSeconds: 30,
});
export type ScheduledTaskStartPayload = PayloadOf<typeof scheduledTaskStartJob>;

/** The continuation of a run's chat turn (sent by the chat run's end): the run ends as its turn did, and its answer is e-mailed. */
export const scheduledTaskFinishJob = defineJob({
  name: 'scheduled-tasks.finish-run',
  version: 1,
  nature: 'computes',
  payload: runPayload,
  searchable: ['run_id'],
  policy: { retryLimit: 5, retryDelaySeconds: 2, expireInSeconds: 60 },
  expectedSeconds: 2,
});

/** The answer of one run to one recipient (the provider dedupes on run and recipient). */
export const scheduledTaskEmailJob = defineJob({
  name: 'scheduled-tasks.email',
  version: 1,
  nature: 'waits',
  payload: z.object({ run_id: z.string().uuid(), user_id: z.string().min(1) }),
  searchable: ['run_id', 'user_id'],
});
export type ScheduledTaskEmailPayload = PayloadOf<typeof scheduledTaskEmailJob>;
