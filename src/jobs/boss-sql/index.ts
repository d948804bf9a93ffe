/**
 * Every SQL statement of the application on pg-boss's schema (`pgboss.*`), behind named functions
 * with typed rows, one file per concern:
 * - ./job-reads.ts   the console's job lists, lookups, bulk previews and snapshots;
 * - ./queue-reads.ts queue health, the tenant panel, the throughput snapshot, the /metrics gauges;
 * - ./deferrals.ts   what pauses do to queued and fetched jobs;
 * - ./locks.ts       row locks and dead-letter lineage for operator commands (and attempt fencing);
 * - ./tables.ts      autovacuum tuning and the console's indexes, run by `release`.
 * Anything pg-boss's own API does (send, retry, redrive, cancel, resume, delete, getQueue,
 * getJobById, schemaVersion) goes through the API instead. Nothing else in src/ or workers/ names
 * the schema: test/jobs/module-boundaries.test.ts fails if something does.
 *
 * These statements depend on pg-boss's internals, verified against the version below. On any
 * upgrade, test/jobs/boss-schema.test.ts fails until this is re-checked and the pins moved.
 */

/** The pg-boss release and schema version these statements were verified against. */
export const VERIFIED_PGBOSS = { package: '12.35.0', schema: 43 } as const;

/** Every column of pg-boss's tables read or written here (checked against the installed schema by the same test). */
export const BOSS_COLUMNS = {
  job: [
    'id',
    'name',
    'state',
    'group_id',
    'data',
    'output',
    'retry_count',
    'retry_limit',
    'priority',
    'created_on',
    'start_after',
    'started_on',
    'completed_on',
    'heartbeat_on',
    'blocked',
    'dead_letter',
    'source_name',
    'source_id',
  ],
  queue: ['name', 'dead_letter', 'ready_count', 'deferred_count', 'active_count', 'failed_count', 'monitor_on'],
} as const;

export { type DeferUntil, deferFetchedJob, deferQueuedJobs, restoreDeferredJobs } from './deferrals.ts';
export {
  countJobRows,
  estimateJobRows,
  findJobRow,
  findJobRows,
  JOB_COLUMNS,
  type JobRow,
  type JobSelection,
  type JobState,
  type JobWindow,
  lastCreatedOn,
  listJobRows,
  previewJobRows,
  snapshotJobRows,
} from './job-reads.ts';
export { idsStillIn, type JobRef, type LockedJob, lockJobState, lockJobs } from './locks.ts';
export {
  type OrganizationLoadRow,
  organizationLoad,
  type QueueDepthRow,
  queueCounts,
  queueDepths,
  queueNames,
  recordThroughput,
  type WaitingCount,
} from './queue-reads.ts';
export { indexJobTable, jobTableStorage, searchableIndexName, tuneJobTables } from './tables.ts';
