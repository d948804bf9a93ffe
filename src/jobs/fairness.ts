import type { Config } from '../config/schema.ts';

/**
 * How many jobs of one organization may run at once on a queue: the fairness between tenants.
 *
 * By default a share of each worker's own slots (`JOB_ORGANIZATION_SHARE` × `WORKER_CONCURRENCY`,
 * at least 1): pg-boss's local group concurrency, so an organization holds at most that share of every
 * worker, hence of the fleet, however many workers run, and the other organizations always find free
 * slots. (A fixed number across the fleet would equal the whole capacity of a small fleet: the old
 * default of 8 was all the slots of two workers.) With `WORKER_CONCURRENCY` 1 the share rounds up to
 * the one slot: fairness needs at least two slots per worker.
 *
 * `JOB_ORGANIZATION_CONCURRENCY` set: that many across every worker instead (pg-boss group
 * concurrency), whatever the fleet's size. pg-boss takes one or the other.
 */
export type OrganizationLimit = { mode: 'share'; share: number; perWorker: number } | { mode: 'fixed'; limit: number };

export function organizationLimit(config: Pick<Config, 'JOB_ORGANIZATION_SHARE' | 'JOB_ORGANIZATION_CONCURRENCY' | 'WORKER_CONCURRENCY'>): OrganizationLimit {
  if (config.JOB_ORGANIZATION_CONCURRENCY !== undefined) return { mode: 'fixed', limit: config.JOB_ORGANIZATION_CONCURRENCY };
  return {
    mode: 'share',
    share: config.JOB_ORGANIZATION_SHARE,
    perWorker: Math.max(1, Math.floor(config.JOB_ORGANIZATION_SHARE * config.WORKER_CONCURRENCY)),
  };
}

/** pg-boss work() options enforcing the limit (group id = organization id, set by JobQueue.enqueue). */
export function organizationWorkOptions(limit: OrganizationLimit, slots: number): { localGroupConcurrency: number } | { groupConcurrency: number } {
  return limit.mode === 'share' ? { localGroupConcurrency: Math.min(limit.perWorker, slots) } : { groupConcurrency: limit.limit };
}

/** What one worker records in its registry row: the per-organization slots it allows (share mode), or null (fixed: the limit is the fleet's). */
export const perWorkerLimit = (limit: OrganizationLimit): number | null => (limit.mode === 'share' ? limit.perWorker : null);
