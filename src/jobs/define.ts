import type { Job } from 'pg-boss';
import type { z } from 'zod';
import type { Deps } from '../platform/deps.ts';
import type { Logger } from '../platform/logger.ts';
import { unstamp } from './origin.ts';

/** Retry, expiry and retention of a queue; every job of the queue inherits it. */
export interface QueuePolicy {
  retryLimit: number;
  retryDelaySeconds: number;
  retryBackoff: boolean;
  retryDelayMaxSeconds?: number;
  /** How long one attempt may run before pg-boss gives up on it (a live but stuck handler). */
  expireInSeconds: number;
  /**
   * A running attempt refreshes its heartbeat every `heartbeatSeconds / 2`; the supervisor fails an
   * attempt whose heartbeat is older than this (≥ 10), so a dead worker's job is retried in about a
   * minute instead of after `expireInSeconds`. `null`: no heartbeat.
   */
  heartbeatSeconds: number | null;
  /** Keep finished jobs this long so operators can inspect them. */
  deleteAfterSeconds: number;
}

/** What a handler gets besides its payload. */
export interface JobContext {
  deps: Deps;
  job: Job<unknown>;
  log: Logger;
  /** Aborted when the attempt expires, its heartbeat is lost or the worker stops: long work should give up. */
  signal: AbortSignal;
  /** No retry follows this attempt: a transient failure must now end the work (e.g. the asset in `error`). */
  lastAttempt: boolean;
}

/**
 * Runs one attempt. It must be idempotent: an attempt cut short (worker killed, expiry) is retried
 * with the same payload, so every side effect is guarded by state it checks first.
 */
export type JobRun<Payload> = (payload: Payload, context: JobContext) => Promise<void>;

/**
 * A job type, complete: a versioned queue name, the payload contract shared by the API (which
 * enqueues) and the workers (which re-validate), the queue's policy, an optional cron schedule and
 * the handler. The handler is a loader (a dynamic import), so a process that only enqueues — the
 * web process — never loads worker code. A breaking payload change gets a new version, hence a new
 * queue, so old jobs drain under the old contract.
 */
export interface JobDefinition<Payload extends z.ZodType = z.ZodType> {
  /** The queue: `<name>.v<version>`. */
  name: string;
  version: number;
  payload: Payload;
  policy: QueuePolicy;
  /** Failed jobs (retries exhausted) are copied here for operators to inspect and redrive. */
  deadLetter: string;
  /** Cron (UTC) on which the workers send this job with an empty payload; pg-boss sends each run once. */
  cron: string | null;
  /**
   * Payload fields (top-level ids) operators may search jobs by — "which jobs worked on asset X".
   * Each gets an expression index on the job table at release, so only declared fields are searchable.
   */
  searchable: readonly string[];
  /** Payload fields redacted for organization admins in the console (e.g. e-mail addresses); an operator may reveal them, audited. */
  sensitive: readonly string[];
  handler: () => Promise<JobRun<z.output<Payload>>>;
}

export type PayloadOf<J extends JobDefinition> = z.input<J['payload']>;

export const defaultPolicy: QueuePolicy = {
  retryLimit: 5,
  retryDelaySeconds: 5,
  retryBackoff: true,
  retryDelayMaxSeconds: 600,
  expireInSeconds: 15 * 60,
  heartbeatSeconds: 20,
  deleteAfterSeconds: 7 * 24 * 3600,
};

export function defineJob<Payload extends z.ZodType>(spec: {
  name: string;
  version: number;
  payload: Payload;
  policy?: Partial<QueuePolicy>;
  cron?: string;
  searchable?: readonly (keyof z.input<Payload> & string)[];
  sensitive?: readonly (keyof z.input<Payload> & string)[];
  /** e.g. `() => import('./handlers.ts').then((m) => m.importLink)` */
  handler: () => Promise<JobRun<NoInfer<z.output<Payload>>>>;
}): JobDefinition<Payload> {
  const queue = `${spec.name}.v${spec.version}`;
  return {
    name: queue,
    version: spec.version,
    payload: spec.payload,
    policy: { ...defaultPolicy, ...spec.policy },
    deadLetter: `${queue}.dead`,
    cron: spec.cron ?? null,
    searchable: spec.searchable ?? [],
    sensitive: spec.sensitive ?? [],
    handler: spec.handler,
  };
}

/**
 * One attempt of `job` on `data`, exactly as a worker runs it: the payload is re-validated (it
 * crossed a process boundary and may predate a deploy), then the handler is loaded and called.
 */
export async function runJob<J extends JobDefinition>(job: J, data: unknown, context: Omit<JobContext, 'lastAttempt'>): Promise<void> {
  // The origin's reserved keys (src/jobs/origin.ts) are not part of the payload contract.
  const payload = job.payload.parse(unstamp(data).payload) as z.output<J['payload']>;
  const run = await job.handler();
  await run(payload, { ...context, lastAttempt: (context.job.retryCount ?? 0) >= job.policy.retryLimit });
}
