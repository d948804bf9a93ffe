import type { Knex } from 'knex';
import type { Actor } from '../access/index.ts';
import { conflict, notFound } from '../core/errors.ts';
import {
  countJobRows,
  countJobRowsUpTo,
  estimateJobRows,
  findJobRow,
  jobTableStatistics,
  type JobSelection,
  type JobWindow,
  listJobRows,
  lockJobState,
  runningAttempts,
  startNow,
} from '../jobs/boss-sql/index.ts';
import { cancelJob, reopenForRetry } from '../jobs/ends.ts';
import { organizationOfJob, unstamp } from '../jobs/origin.ts';
import type { Deps } from '../platform/deps.ts';
import { consoleCallerFor, type ConsoleCaller } from './access.ts';
import { actionsOnJob, recordAction } from './audit.ts';
import { attemptHistory, timelineOf } from './job-detail.ts';
import { MAX_WINDOW_DAYS, windowOf, withinTimeout, type JobRow } from './job-rows.ts';
import { presentAction, presentJob } from './presenter.ts';
import { liveness, presentJobs } from './running.ts';
import type { JobFilter } from './schema.ts';
import { inTransaction } from '../db/transaction.ts';

/** Every payload field some job type declared searchable (each one indexed on the job table). */
export const searchableFields = (deps: Deps) => [...new Set(deps.jobs.definitions.flatMap((job) => job.searchable))];

/** The queues pg-boss's cron schedules send to: the platform's own schedules (their jobs are the `cron` origin). */
export const cronQueues = (deps: Deps) => deps.jobs.definitions.filter((job) => job.cron).map((job) => job.name);

/**
 * Whose jobs a filter means: as asked, else everything when it names a queue, a request or a resource
 * (the caller is looking for something specific), else the `work` origin — the default list leaves out
 * pg-boss's internal queues and the platform's cron jobs, which would fill it every minute.
 */
export function originOf(deps: Deps, filter: JobFilter, explicit = false): JobSelection['queueOrigin'] {
  const kind = filter.origin ?? (explicit || filter.queue || filter.request_id || filter.resource_id ? 'all' : 'work');
  return kind === 'all' ? undefined : { kind, cronQueues: cronQueues(deps) };
}

/** Rows a list counts exactly before it estimates instead (a count costs at most this many index entries). */
export const EXACT_COUNT_CAP = 1_000;

/**
 * A list's `total`: exact up to EXACT_COUNT_CAP rows (counted through the list's own index), or with
 * `count=exact` at any size; beyond the cap an estimate that says so, between what was counted and
 * the rows the whole table holds now (its activity statistics): the planner's row estimate when it
 * is at least what was counted, else the density of the newest rows extrapolated over the window. A
 * planner estimate below rows already counted means statistics older than the rows — the "≈ 1 jobs"
 * of a million, or a burst of jobs (a fan-out) the next ANALYZE has yet to see. Then the rows that
 * match can exceed the planner's figure by at most the rows changed since that ANALYZE, which bounds
 * the extrapolation: a burst's jobs, all created in the same second, look like a whole window of them.
 */
export async function totalOf(trx: Knex.Transaction, filter: JobSelection, window: JobWindow, searchable: string[], exact: boolean) {
  if (exact) return { value: await countJobRows(trx, filter, window, searchable), exact: true, at_least: null, basis: 'counted' as const };
  const counted = await countJobRowsUpTo(trx, filter, window, searchable, EXACT_COUNT_CAP + 1);
  if (counted.n <= EXACT_COUNT_CAP) return { value: counted.n, exact: true, at_least: null, basis: 'counted' as const };
  const table = await jobTableStatistics(trx);
  const planner = await estimateJobRows(trx, filter, window, searchable);
  const between = (value: number, ceiling: number) => Math.min(Math.max(counted.n, ceiling), Math.max(counted.n, value));
  if (planner >= counted.n) return { value: between(planner, table.rows), exact: false, at_least: counted.n, basis: 'planner' as const };
  const reached = window.to.getTime() - (counted.reach?.getTime() ?? window.to.getTime());
  const span = window.to.getTime() - window.from.getTime();
  const unseen = Math.min(table.rows, planner + table.modified);
  const extrapolated = reached > 0 ? Math.round((counted.n * span) / reached) : unseen;
  return { value: between(extrapolated, unseen), exact: false, at_least: counted.n, basis: 'extrapolated' as const };
}

/** A non-operator's filter is always their own organization. */
const scoped = (caller: ConsoleCaller, filter: JobFilter): JobFilter => (caller.operator ? filter : { ...filter, organization_id: caller.organizationId! });

export async function listJobsFor(
  deps: Deps,
  caller: ConsoleCaller,
  query: JobFilter & { stuck?: boolean | undefined; limit: number; cursor?: string | undefined; count: 'estimated' | 'exact' },
) {
  const scopedFilter = scoped(caller, query);
  const filter: JobSelection = {
    ...scopedFilter,
    stuck: query.stuck ? liveness(deps.config) : undefined,
    queueOrigin: originOf(deps, scopedFilter, Boolean(query.stuck)),
  };
  // Stuck attempts are found through the active index whatever their age: the window only bounds how far back they were created.
  const window = windowOf(scopedFilter, new Date(), query.stuck ? MAX_WINDOW_DAYS : 1);
  const searchable = searchableFields(deps);
  return withinTimeout(deps.db, deps.config.OPS_STATEMENT_TIMEOUT_MS, async (trx) => {
    const page = await listJobRows(trx, filter, window, searchable, query);
    const total = await totalOf(trx, filter, window, searchable, query.count === 'exact');
    return {
      items: await presentJobs(trx, deps, page.items),
      next_cursor: page.next_cursor,
      total,
      window: { from: window.from.toISOString(), to: window.to.toISOString() },
    };
  });
}

/** Jobs a request enqueued, or jobs whose searchable payload names a resource id: no time window (both are indexed). */
export async function lookupJobs(
  deps: Deps,
  caller: ConsoleCaller,
  by: Pick<JobFilter, 'request_id' | 'resource_id'>,
  page: { limit: number; cursor?: string | undefined },
) {
  const filter = scoped(caller, { ...by, organization_id: caller.organizationId ?? undefined });
  return withinTimeout(deps.db, deps.config.OPS_STATEMENT_TIMEOUT_MS, async (trx) => {
    const found = await listJobRows(trx, filter, null, searchableFields(deps), page);
    return { items: await presentJobs(trx, deps, found.items), next_cursor: found.next_cursor };
  });
}

/** The job, if the actor may see it (404 otherwise, like a missing one), with the caller it is seen as. */
async function visibleJob(deps: Pick<Deps, 'db'>, actor: Actor, id: string): Promise<{ job: JobRow; caller: ConsoleCaller }> {
  const job = await findJobRow(deps.db, id);
  if (!job) throw notFound('job');
  return { job, caller: await consoleCallerFor(actor, organizationOfJob(job)) };
}

export async function jobDetail(deps: Pick<Deps, 'config' | 'db' | 'jobs'>, actor: Actor, id: string) {
  const { job } = await visibleJob(deps, actor, id);
  const [history, actions, running] = await Promise.all([
    attemptHistory(deps.db, job),
    actionsOnJob(deps.db, id),
    job.state === 'active' ? runningAttempts(deps.db, [id], liveness(deps.config)) : [],
  ]);
  return {
    job: presentJob(job, deps.jobs.definition(job.name), running[0]),
    history,
    timeline: timelineOf(job, history, actions),
    actions: actions.map(presentAction),
  };
}

export type Command = 'retry' | 'cancel' | 'delete' | 'retry_now';

const refusals: Record<Command, string> = {
  retry: 'only a failed or cancelled job can be retried',
  cancel: 'only a queued, retrying or running job can be cancelled',
  delete: 'a running job cannot be deleted: cancel it first',
  retry_now: 'only a job waiting for a later start (its retry backoff, a delayed send) can be started now',
};

/**
 * retry (failed → one more attempt; cancelled → queued again), retry_now (a job waiting out its
 * backoff is due at once; not one a pause holds back), cancel (queued → cancelled;
 * running → cancelled and its handler's abort signal fired through NOTIFY), delete. Each with its
 * audit record in one transaction; a job in the wrong state is 409 and nothing is recorded. A failed
 * job's retry cancels its dead letter, and is 409 when the dead letter was already redriven
 * (src/jobs/commands.ts: one failure gets exactly one new attempt).
 */
export async function commandJob(deps: Deps, actor: Actor, id: string, command: Command, reason: string | undefined) {
  const { job, caller } = await visibleJob(deps, actor, id);
  await inTransaction(deps.db, async (trx) => {
    const locked = await lockJobState(trx, job.name, id);
    if (!locked) throw notFound('job');
    let changed = false;
    let deadLetter: string | undefined;
    if (command === 'delete') changed = locked.state !== 'active' && (await deps.jobs.commands.remove(trx, job.name, [id])) > 0;
    else if (command === 'retry_now') {
      const outcome = await startNow(trx, job.name, id);
      if (outcome === 'paused') throw conflict('this job is held back by a pause: resume the pause to release it', ['state']);
      changed = outcome === 'started';
    } else if (command === 'cancel') {
      // The job's resource ends with it (a generation canceled, its hold released), and a running attempt is told.
      changed = await cancelJob(trx, deps, job.name, id, {
        code: 'canceled',
        message: reason ? `canceled by an operator: ${reason}` : 'canceled by an operator',
      });
    } else if (locked.state === 'failed') {
      // Its resource ended with the failure: its kind reopens it for the new attempt, or the retry is refused.
      const refusal = await reopenForRetry(trx, deps, job.name, job.data);
      if (refusal) throw conflict(`this job is failed and ${refusal}`, ['state']);
      const retried = await deps.jobs.commands.retryFailed(trx, job.name, [id]);
      const refused = retried.skipped[0];
      if (refused?.cause.kind === 'redriven' || refused?.cause.kind === 'dead-letter-running')
        throw conflict(`this job is ${locked.state} and ${refused.reason}`, ['state']);
      changed = retried.done.length > 0;
      deadLetter = retried.deadLettersCancelled.get(id);
    } else if (locked.state === 'cancelled') changed = (await deps.jobs.commands.resumeCancelled(trx, job.name, [id])) > 0;
    if (!changed) throw conflict(`${refusals[command]} (it is ${locked.state})`, ['state']);
    await recordAction(trx, caller, {
      action: `job.${command}`,
      organizationId: organizationOfJob(job),
      // The dead letter cancelled with the retry is named, so the log answers why it was not redriven.
      target: { queue: job.name, from_state: locked.state, ...(deadLetter && { dead_letter_cancelled: deadLetter }) },
      jobIds: [id],
      count: 1,
      reason,
    });
  });
  if (command === 'delete') return null;
  return presentJob((await deps.jobs.commands.job(job.name, id))!, deps.jobs.definition(job.name));
}

/** The unredacted payload, for operators only; the reveal is recorded before the answer leaves. */
export async function revealPayload(deps: Pick<Deps, 'db' | 'jobs'>, caller: ConsoleCaller, id: string, reason: string) {
  const job = await findJobRow(deps.db, id);
  if (!job) throw notFound('job');
  await inTransaction(deps.db, (trx) =>
    recordAction(trx, caller, {
      action: 'job.reveal',
      organizationId: organizationOfJob(job),
      target: { queue: job.name, fields: deps.jobs.definition(job.name)?.sensitive ?? [] },
      jobIds: [id],
      count: 1,
      reason,
    }),
  );
  return { job_id: id, payload: unstamp(job.data ?? {}).payload as Record<string, unknown> };
}
