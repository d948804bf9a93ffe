import { z } from '../core/zod.ts';
import { defineJob } from '../jobs/define.ts';

const chatRunPayload = z.object({ run_id: z.string().uuid() });
export type ChatRunPayload = z.output<typeof chatRunPayload>;

/**
 * A chat run: hold credits → stream the answer (snapshots and heartbeats every 250 ms, stop when the
 * run is stopped) → append the assistant message, capture the usage, release the lock. Every step
 * checks the run's state first, so a retried attempt (worker killed, heartbeat lost) repeats nothing.
 */
export const chatRunJob = defineJob({
  name: 'conversation.chat-run',
  version: 1,
  payload: chatRunPayload,
  searchable: ['run_id'],
  policy: { retryLimit: 3, retryDelaySeconds: 2, retryBackoff: true, retryDelayMaxSeconds: 60, expireInSeconds: 15 * 60 },
  handler: () => import('./handlers.ts').then((m) => m.runChat),
});
