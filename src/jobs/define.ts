import type { z } from 'zod';

/** Retry, expiry and retention of a queue; every job of the queue inherits it. */
export interface QueuePolicy {
  retryLimit: number;
  retryDelaySeconds: number;
  retryBackoff: boolean;
  retryDelayMaxSeconds?: number;
  /** How long one attempt may stay active before pg-boss retries it (a crashed worker's job). */
  expireInSeconds: number;
  /** Attempts must heartbeat this often (≥ 10); a silent worker's job is retried sooner than expiry. */
  heartbeatSeconds?: number;
  /** Keep finished jobs this long so operators can inspect them. */
  deleteAfterSeconds: number;
}

/**
 * A job type: a versioned queue name, the payload contract shared by the API (which enqueues)
 * and the workers (which re-validate), and the queue's retry policy. A breaking payload change
 * gets a new version, hence a new queue, so old jobs drain under the old contract.
 */
export interface JobDefinition<Payload extends z.ZodType = z.ZodType> {
  name: string;
  version: number;
  payload: Payload;
  policy: QueuePolicy;
  /** Failed jobs (retries exhausted) are copied here for operators to inspect and redrive. */
  deadLetter: string;
}

export type PayloadOf<J extends JobDefinition> = z.input<J['payload']>;

export const defaultPolicy: QueuePolicy = {
  retryLimit: 5,
  retryDelaySeconds: 5,
  retryBackoff: true,
  retryDelayMaxSeconds: 600,
  expireInSeconds: 15 * 60,
  deleteAfterSeconds: 7 * 24 * 3600,
};

export function defineJob<Payload extends z.ZodType>(spec: {
  name: string;
  version: number;
  payload: Payload;
  policy?: Partial<QueuePolicy>;
}): JobDefinition<Payload> {
  const queue = `${spec.name}.v${spec.version}`;
  return {
    name: queue,
    version: spec.version,
    payload: spec.payload,
    policy: { ...defaultPolicy, ...spec.policy },
    deadLetter: `${queue}.dead`,
  };
}
