/**
 * How a job ends, and its resource with it: every function here changes the job's state through
 * pg-boss and applies the job kind's declared end (src/jobs/define.ts JobEnds) in ONE transaction,
 * so a job and the record it works on never disagree — a generation `failed` with its hold released
 * exactly when its job failed, never a `running` generation behind a finished job.
 *
 * Lock order, everywhere: the job row first (pg-boss's own commands and Lease.hold), then the
 * resource's rows, then credit holds and balances.
 */
import type { Knex } from 'knex';
import type { z } from 'zod';
import { notify } from '../db/notifications.ts';
import type { Deps } from '../platform/deps.ts';
import { type EndReason, type JobDefinition, LeaseLost, type RunnableJob } from './define.ts';
import type { Lease } from './lease.ts';
import { type DeadLetter, lockJobRow, openJobsNaming, spendRetries, unsettledDeadLetters } from './boss-sql/index.ts';
import { continuationOf, organizationOfJob, unstamp } from './origin.ts';
import { jobError } from './error-record.ts';

/** A running attempt listens here for its own job id: a cancel NOTIFYs it at commit, and the handler's signal fires. */
export const JOB_CONTROL_CHANNEL = 'job_control';

type JobEndKind = 'failed' | 'expired' | 'canceled';

async function recordEnd(
  trx: Knex.Transaction,
  end: { job_id: string; queue: string; organization_id: string | null; attempt: number; end: JobEndKind; reason: EndReason },
): Promise<void> {
  // Redacted like every stored job error (./error-record.ts): handlers', operators' and tenants' words alike.
  await trx('job_ends').insert({ ...end, reason: JSON.stringify(jobError(end.reason.code, end.reason.message)) });
}

/** Sends the job's continuation, if it has one, on the transaction that ends it (for the same organization). */
async function continueAfter(trx: Knex.Transaction, deps: Deps, job: { data: unknown; group_id: string | null }): Promise<void> {
  const then = continuationOf(job.data);
  const next = then && deps.jobs.definition(then.queue);
  if (then && !next) throw new Error(`no job type works the continuation queue ${then.queue}`);
  if (next) await deps.jobs.enqueue(trx, next, then!.payload as never, { organizationId: organizationOfJob(job) });
}

const payloadOf = (definition: RunnableJob, data: unknown) => definition.payload.parse(unstamp(data).payload) as z.output<RunnableJob['payload']>;

/**
 * The attempt's result: the kind's `succeeded` end and pg-boss's fenced completion, committed together
 * or not at all. The completion comes first and is the lease check: it locks the job row (as
 * Lease.hold would) and changes it only while it is still this attempt's. `job` is the attempt as
 * fetched (its data and group never change).
 */
export async function succeed(
  deps: Deps,
  lease: Lease,
  definition: RunnableJob,
  payload: unknown,
  result: unknown,
  job: { data: unknown; group_id: string | null },
): Promise<void> {
  const ends = await definition.ends?.();
  const after = await deps.db.transaction(async (trx) => {
    const { queue, id, attempt } = lease.token;
    if (!(await deps.jobs.completeAttempt(trx, queue, { id, retryCount: attempt }))) throw new LeaseLost(lease.token, null);
    await continueAfter(trx, deps, job);
    // The resource's end last: it may capture or release credits, which locks the organization's
    // balance row until the commit, so nothing else of this transaction may run while it is held.
    return ends?.succeeded?.(trx, payload, result, { deps, jobId: lease.token.id });
  });
  // What the end left for after its commit (journaled in it, so a failure here loses nothing; the job is done).
  if (after) await after().catch((error: unknown) => deps.log.warn({ err: error, job_id: lease.token.id }, 'job end: the step after its commit failed'));
}

/**
 * No retry follows: the job ends `failed` (pg-boss copies it to its dead letters, where operators
 * see and may redrive it) and its resource takes the kind's `failed` end, in one transaction.
 */
export async function failForGood(deps: Deps, lease: Lease, definition: RunnableJob, payload: unknown, reason: EndReason): Promise<void> {
  const ends = await definition.ends?.();
  await deps.db.transaction(async (trx) => {
    const job = await lease.hold(trx);
    const { queue, id, attempt } = lease.token;
    await spendRetries(trx, queue, id, attempt);
    if (!(await deps.jobs.failAttempt(trx, queue, { id, retryCount: attempt }, jobError(reason.code, reason.message)))) throw new LeaseLost(lease.token, null);
    await recordEnd(trx, { job_id: id, queue, organization_id: organizationOfJob(job), attempt, end: 'failed', reason });
    await continueAfter(trx, deps, job);
    // Last, as in `succeed`: a release locks the organization's balance row until the commit.
    await ends?.failed(trx, payload, reason, { deps, jobId: id });
  });
}

/**
 * Cancels a job (queued, waiting to retry or running) on the caller's transaction, with its
 * resource's `canceled` end; a running attempt hears it at commit (its signal fires) and can no
 * longer write anything (its lease is gone). Returns false when the job had already ended.
 */
export async function cancelJob(trx: Knex.Transaction, deps: Deps, queue: string, jobId: string, reason: EndReason): Promise<boolean> {
  const job = await lockJobRow(trx, queue, jobId);
  if (!job || !['created', 'retry', 'active'].includes(job.state)) return false;
  if ((await deps.jobs.cancel(trx, queue, [jobId])) === 0) return false;
  // A dead letter's cancel ends nothing: its resource was settled when the job failed for good.
  const definition = deps.jobs.definition(queue);
  const ends = definition?.name === queue ? await definition.ends?.() : undefined;
  if (definition && ends) await ends.canceled(trx, payloadOf(definition, job.data), reason, { deps, jobId });
  await recordEnd(trx, { job_id: jobId, queue, organization_id: organizationOfJob(job), attempt: job.retry_count, end: 'canceled', reason });
  await continueAfter(trx, deps, job);
  if (job.state === 'active') await notify(trx, JOB_CONTROL_CHANNEL, jobId);
  return true;
}

/**
 * Cancels the open jobs of `definition` working on the resource whose id is `value` under the
 * searchable payload field `field` (e.g. a generation's job by `generation_id`). Returns how many.
 */
export async function cancelWorkOn<J extends JobDefinition>(
  trx: Knex.Transaction,
  deps: Deps,
  definition: J,
  field: J['searchable'][number],
  value: string,
  reason: EndReason,
): Promise<number> {
  let canceled = 0;
  for (const id of await openJobsNaming(trx, definition.name, field, value)) if (await cancelJob(trx, deps, definition.name, id, reason)) canceled += 1;
  return canceled;
}

/** What pg-boss's own failure said, as an end: its expiry and heartbeat timeouts, our lost-worker sweep, or the error. */
function reasonOf(letter: DeadLetter): { end: JobEndKind; reason: EndReason } {
  const output = (letter.output ?? {}) as { message?: unknown; code?: unknown; value?: { message?: unknown } };
  const message = String(output.value?.message ?? output.message ?? 'the job failed');
  if (/timed out/.test(message)) return { end: 'expired', reason: { code: 'expired', message: 'the job ran out of time (its attempt expired)' } };
  if (/heartbeat|was lost/.test(message)) return { end: 'failed', reason: { code: 'lost', message: 'the worker running the job stopped responding' } };
  return { end: 'failed', reason: { code: typeof output.code === 'string' ? output.code : 'failed', message } };
}

/** How far back the sweep looks for failures to settle (a worker fleet down longer than this needs an operator). */
const SWEEP_WINDOW_SECONDS = 24 * 3600;

/**
 * Settles the resources of jobs pg-boss failed for good on its own — an attempt that expired, or
 * whose heartbeat stopped on its last try — which no handler was there to end. Run by every
 * worker's sweep; two sweeps at once settle each job once (the job row is locked and the end record
 * re-checked). Returns how many it settled.
 */
export async function settleAbandonedJobs(deps: Deps, definitions: readonly RunnableJob[], limit = 100): Promise<number> {
  const withEnds = definitions.filter((definition) => definition.ends);
  const letters = await unsettledDeadLetters(
    deps.db,
    withEnds.map((definition) => definition.name),
    SWEEP_WINDOW_SECONDS,
    limit,
  );
  let settled = 0;
  for (const letter of letters) {
    const definition = withEnds.find((candidate) => candidate.name === letter.queue)!;
    const ends = (await definition.ends!())!;
    const { end, reason } = reasonOf(letter);
    settled += await deps.db.transaction(async (trx) => {
      const job = await lockJobRow(trx, letter.queue, letter.job_id);
      // Retried by an operator meanwhile (its new attempt settles itself), or settled by another sweep.
      if (job?.state !== 'failed') return 0;
      const recorded = await trx('job_ends').where({ job_id: letter.job_id }).where('ended_at', '>=', letter.dead_at).first('id');
      if (recorded) return 0;
      await ends.failed(trx, payloadOf(definition, letter.data), reason, { deps, jobId: letter.job_id });
      await recordEnd(trx, { job_id: letter.job_id, queue: letter.queue, organization_id: letter.organization_id, attempt: letter.attempt, end, reason });
      await continueAfter(trx, deps, job);
      return 1;
    });
  }
  return settled;
}

/**
 * Before an operator's retry of a failed job, or redrive of its dead letter (`queue` either): the
 * kind's `reopen` puts its resource back in progress in the caller's transaction. Returns why the
 * retry is refused — a kind with ends that cannot reopen, or a resource no longer failed — or null.
 */
export async function reopenForRetry(trx: Knex.Transaction, deps: Deps, queue: string, data: unknown): Promise<string | null> {
  const definition = deps.jobs.definition(queue);
  const ends = await definition?.ends?.();
  if (!definition || !ends) return null;
  if (!ends.reopen) return `its work ended with the failure (${definition.name}: its resource settled, any credits released); start it anew instead`;
  const reopened = await ends.reopen(trx, payloadOf(definition, data), { deps, jobId: null });
  return reopened ? null : 'its resource is no longer in the state the failure left it in; nothing to retry';
}
