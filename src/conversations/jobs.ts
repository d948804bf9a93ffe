import { z } from '../core/zod.ts';
import { defineJob } from '../jobs/define.ts';

const chatRunPayload = z.object({ run_id: z.string().uuid() });
export type ChatRunPayload = z.output<typeof chatRunPayload>;

/**
 * A chat run: hold credits → stream the answer (snapshots every CHAT_STREAM_TICK_MS through the worker's stream coalescer, ./stream-batch.ts; a stop cancels the job and
 * aborts the stream) → its end appends the assistant message, captures the usage, releases the
 * rest and the lock (./run-ends.ts). The hold is placed once per run, so a retried attempt (worker
 * killed, heartbeat lost) repeats nothing.
 */
export const chatRunJob = defineJob({
  name: 'conversation.chat-run',
  version: 1,
  nature: 'waits',
  payload: chatRunPayload,
  searchable: ['run_id'],
  policy: { retryLimit: 3, retryDelaySeconds: 2, retryBackoff: true, retryDelayMaxSeconds: 60, expireInSeconds: 15 * 60 },
  expectedSeconds: 120,
});

/**
 * A turn waiting for the caller to approve its tool calls ends when they are not answered in time
 * (CHAT_APPROVAL_TTL_SECONDS): stopped like DELETE /run, its hold settled. Sent with a delay when
 * the turn starts waiting; finds nothing to do once the calls were answered.
 */
export const approvalExpiryJob = defineJob({
  name: 'conversation.approval-expiry',
  version: 1,
  nature: 'computes',
  payload: chatRunPayload,
  searchable: ['run_id'],
  policy: { retryLimit: 5, retryDelaySeconds: 5, retryBackoff: true, expireInSeconds: 60 },
  expectedSeconds: 5,
});
