import type { Config } from '../config/schema.ts';
import type { FairShare } from './boss-sql/index.ts';
import type { JobDefinition } from './define.ts';

/**
 * How the organizations share a queue: the fairness between tenants.
 *
 * By default `weighted`: each fetch takes the next job of the organization with the least in flight
 * on the queue for its weight (`job_weights.weight`, default 1; src/jobs/boss-sql/fair-share.ts).
 * An organization alone may use every slot of the fleet; when several have work waiting, each gets
 * slots in proportion to its weight, so none waits behind another's burst, and none is held to a
 * small share of a worker (the old rule: half of each worker's four slots).
 *
 * `JOB_ORGANIZATION_CONCURRENCY` set (`fixed`): the same share, with a hard cap of that many jobs per
 * organization and queue across every worker.
 */
export type OrganizationLimit = { mode: 'weighted' } | { mode: 'fixed'; limit: number };

export function organizationLimit(config: Pick<Config, 'JOB_ORGANIZATION_CONCURRENCY'>): OrganizationLimit {
  return config.JOB_ORGANIZATION_CONCURRENCY !== undefined ? { mode: 'fixed', limit: config.JOB_ORGANIZATION_CONCURRENCY } : { mode: 'weighted' };
}

/** The queues of `jobs` shared between organizations (every one not grouped by a key of its own, as deliveries are by endpoint), and the cap. */
export function fairShareOf(jobs: readonly Pick<JobDefinition, 'name' | 'work'>[], config: Pick<Config, 'JOB_ORGANIZATION_CONCURRENCY'>): FairShare {
  const limit = organizationLimit(config);
  return {
    queues: new Set(jobs.filter((job) => job.work.groupConcurrency === undefined).map((job) => job.name)),
    cap: limit.mode === 'fixed' ? limit.limit : null,
  };
}
