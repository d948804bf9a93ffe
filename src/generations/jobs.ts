import { z } from '../core/zod.ts';
import { defineJob } from '../jobs/define.ts';

const generationPayload = z.object({ generation_id: z.string().uuid() });
export type GenerationPayload = z.output<typeof generationPayload>;

/**
 * One generation on a worker: call the model's provider (progress reported, aborted on cancel or
 * timeout) and store the files; its end settles its metered call — the assets, the generation's
 * end and the capture (or the release) in the transaction that ends the job, once. A killed
 * worker's attempt is retried after its heartbeat goes stale and simply runs the generation again
 * (the provider gets the same idempotency key).
 */
export const generationJob = defineJob({
  name: 'generation.run',
  version: 1,
  nature: 'waits',
  payload: generationPayload,
  searchable: ['generation_id'],
  policy: { retryLimit: 2, retryDelaySeconds: 2, expireInSeconds: 30 * 60 },
  expectedSeconds: 120,
});

/**
 * Stops a generation's job at its provider (a prediction) when the generation ended while nobody was
 * waiting on it — canceled or failed between two attempts of its continuation — so the provider does
 * not go on computing (and billing us) for a result nobody will fetch. Best effort, retried a little.
 */
export const generationCancelUpstreamJob = defineJob({
  name: 'generation.cancel-upstream',
  version: 1,
  nature: 'waits', // on the provider
  payload: generationPayload,
  searchable: ['generation_id'],
  policy: { retryLimit: 3, retryDelaySeconds: 5, expireInSeconds: 60 },
  expectedSeconds: 5,
});
