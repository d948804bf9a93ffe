import type { Job } from 'pg-boss';
import type { z } from 'zod';
import type { JobDefinition } from '../src/jobs/define.ts';
import type { Deps } from '../src/platform/deps.ts';
import type { Logger } from '../src/platform/logger.ts';

export interface JobContext {
  deps: Deps;
  job: Job<unknown>;
  log: Logger;
  /** Aborted when the attempt expires or the worker stops: long work should give up. */
  signal: AbortSignal;
}

/**
 * A job handler. It must be idempotent: an attempt cut short (worker killed, expiry) is retried
 * with the same payload, so every side effect is guarded by state it checks first.
 */
export interface JobHandler<J extends JobDefinition = JobDefinition> {
  job: J;
  run(payload: z.output<J['payload']>, context: JobContext): Promise<void>;
}

export function handle<J extends JobDefinition>(job: J, run: JobHandler<J>['run']): JobHandler<J> {
  return { job, run };
}
