/**
 * Every SQL statement of the application on pg-boss's schema (`pgboss.*`), behind named functions
 * with typed rows, one file per concern:
 * - ./job-reads.ts   the console's job lists, lookups, bulk previews and snapshots;
 * - ./queue-reads.ts queue health, the tenant panel, the throughput snapshot, the /metrics gauges;
 * - ./deferrals.ts   what pauses do to queued and fetched jobs;
 * - ./locks.ts       row locks and dead-letter lineage for operator commands;
 * - ./fair-share.ts the weighted fair share between organizations, in the fetch (the organization with the least in flight for its weight first);
 * - ./claims.ts      a worker's fetch that marks each job it claims with the worker (the history's running attempts), the mark kept through pg-boss's fail, and the attempts lost workers never wrote;
 * - ./attempts.ts    attempt fencing, ending a job for good, open jobs of a resource, failures to settle;
 * - ./running.ts     running attempts against their kind's expected time (stuck), stale heartbeats;
 * - ./tables.ts      autovacuum tuning and the console's indexes, run by `release`;
 * - ./notify.ts      the channel pg-boss NOTIFYs new jobs on (the worker wakes its slots itself).
 * Anything pg-boss's own API does (send, retry, redrive, cancel, resume, delete, getQueue,
 * getJobById, schemaVersion) goes through the API instead. Nothing else in src/ or workers/ names
 * the schema: test/jobs/module-boundaries.test.ts fails if something does.
 *
 * These statements depend on pg-boss's internals, verified against the version below. On any
 * upgrade, test/jobs/boss-schema.test.ts fails until this is re-checked and the pins moved.
 */

import { JOB_COLUMNS } from './job-reads.ts';

/** The pg-boss release and schema version these statements were verified against. */
export const VERIFIED_PGBOSS = { package: '12.35.0', schema: 43 } as const;

/**
 * What to re-check in pg-boss's source (node_modules/pg-boss/dist/plans.js, manager.js) before
 * moving VERIFIED_PGBOSS to a new release: the test that pins it prints this list.
 */
export const UPGRADE_CHECKLIST = [
  'every statement in src/jobs/boss-sql/ (job-reads, queue-reads, deferrals, locks, tables) still means what it says against the new tables',
  'the columns they read and write (BOSS_COLUMNS) and the job_state enum order their `state < active` comparisons rely on',
  "the attempt fence: a fetched attempt is the row with state 'active' and its retry_count (deferFetchedJob, fail/complete by {id, retryCount})",
  "the dead-letter source_* columns: a failure's copy in its dead-letter queue has source_id/source_name = the failed job and source_root_id = its chain's first job; a redriven job has source_root_id and no source_id",
  'the fail/retry CTEs: failJobsBody deletes and re-inserts a failed job under the same id and inserts its dead-letter copy (dlq_jobs); retryJobs moves failed → retry; redriveJobs deletes the dead letter it re-creates',
  'the stale-heartbeat condition silentAttempts copies from failJobsByHeartbeat (heartbeat_on + heartbeat_seconds < job_now() on an active job), and the in_flight attempt numbers stuck attempts are matched by (retry_count)',
  'the fetch statement (plans.fetchNextJob: WITH … UPDATE job j SET state = \'active\', started_on = job_now(), … RETURNING j.id, name, data, retry_count as "retryCount", … "groupId") that claims.ts recognises and extends (the claim\'s mark, and old.* in RETURNING: PostgreSQL 18); the fail re-inserts (plans.failJobsBody: DELETE … RETURNING *, then INSERT of the listed columns from id to source_root_id) that claims.ts makes keep claimed_by; partitions created LIKE job, so a column of the parent reaches new queues; test/jobs/claims.test.ts fails when it no longer recognises them',
  "the NOTIFY channel of new jobs (plans.notifyChannelSql: 'pgboss_' + sha224 of the schema, payload = the queue name) that queueNotifyChannel derives, and Manager.notifyQueue/Worker.notify, which the worker's slot waker replaces",
  'the cached queue counts on the queue table (ready/queued/deferred/active/failed/total_count, monitor_on) and the fetch index the /metrics head-of-queue read follows (job_i11)',
  "the prefix of pg-boss's internal queues (INTERNAL_QUEUE_PREFIX, '__pgboss__': hidden by default, never alerting)",
] as const;

/** Every column of pg-boss's tables read or written here (checked against the installed schema by the same test). */
export const BOSS_COLUMNS = {
  // The console's job rows, and what the runtime, the sweeps and the pauses read besides.
  job: [...JOB_COLUMNS, 'heartbeat_on', 'heartbeat_seconds', 'blocked', 'source_root_id', 'source_retry_count', 'source_output', 'claimed_by'],
  queue: ['name', 'dead_letter', 'ready_count', 'queued_count', 'deferred_count', 'active_count', 'failed_count', 'total_count', 'monitor_on'],
} as const;

export {
  attemptOwnsJob,
  attemptsOwnJobsSql,
  type DeadLetter,
  type LeasedJob,
  lockJobRow,
  openJobsNaming,
  putBackAttempt,
  snoozeAttempt,
  spendRetries,
  unsettledDeadLetters,
} from './attempts.ts';
export { type DeferUntil, deferFetchedJob, deferQueuedJobs, restoreDeferredJobs, startNow } from './deferrals.ts';
export {
  countJobRows,
  countJobRowsUpTo,
  estimateJobRows,
  INTERNAL_QUEUE_PREFIX,
  isInternalQueue,
  jobTableStatistics,
  type JobTableStatistics,
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
export { deadLetterSources, idsStillIn, type JobRef, type LockedJob, lockDeadLettersOf, lockJobState, lockJobs, redrivenCopiesOf } from './locks.ts';
export {
  type CachedQueueCounts,
  cachedQueueCounts,
  type OrganizationLoadRow,
  organizationLoad,
  type QueueDepthRow,
  queueCounts,
  queueDepths,
  queueNames,
  readyQueues,
  recordThroughput,
  type WaitingCount,
} from './queue-reads.ts';
export { type Liveness, type RunningAttempt, runningAttempts, type SilentAttempt, silentAttempts, stuckAttempts } from './running.ts';
export {
  CLAIM_RECORDED,
  CLAIM_STARTED,
  claimRecordingAttempts,
  failKeepingClaims,
  installClaimMarks,
  keepingClaims,
  type FairShare,
  type FetchSeen,
  recordClaims,
  runningClaims,
  type UnrecordedAttempt,
  unrecordedAttempts,
} from './claims.ts';
export { FAIR_CLAIM_INDEX, fairShareFetch } from './fair-share.ts';
export { notifyBatch, queueNotifyChannel } from './notify.ts';
export { prepareHotStatements, preparedName } from './prepared.ts';
export { indexJobTable, jobTableStorage, searchableIndexName, tuneJobTables } from './tables.ts';
