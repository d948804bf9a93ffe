import type { Knex } from 'knex';
import type { Job, PgBoss } from 'pg-boss';
import type { NotificationHub } from '../db/notifications.ts';
import type { Deps } from '../platform/deps.ts';
import type { Logger } from '../platform/logger.ts';
import { runInWorkContext } from '../platform/work-context.ts';
import { attemptError, type AttemptLog, type AttemptOutcome, type AttemptRecord } from './attempts.ts';
import {
  type EndReason,
  isJobFailure,
  isLastAttempt,
  isLeaseLost,
  isNothingToDo,
  isSnoozed,
  isUpstreamBusy,
  type RunnableJob,
  runJob,
  type Snoozed,
  snooze,
  snoozeOf,
  whyNothing,
} from './define.ts';
import { failForGood, JOB_CONTROL_CHANNEL, settleAbandonedJobs, succeed } from './ends.ts';
import { jobError, jobErrorRecord, snakeCode, StoredJobError } from './error-record.ts';
import { Lease } from './lease.ts';
import { continuationOf, stampedOrganization, unstamp } from './origin.ts';
import { CLAIM_RECORDED, CLAIM_STARTED, snoozeAttempt } from './boss-sql/index.ts';
import { cronSchedule, deferFetched, type PauseGate } from './pauses.ts';
import { isContinueLater } from './waits.ts';
import type { HeldJob } from './worker-registry.ts';

export { JOB_CONTROL_CHANNEL };

/** What the runtime reports per attempt (the worker's Prometheus metrics implement it). */
export interface AttemptObserver {
  attemptStarted(queue: string): void;
  attemptEnded(queue: string, outcome: 'completed' | 'failed' | 'deferred', seconds: number): void;
}

interface RuntimeParts {
  deps: Deps;
  db: Knex;
  boss: PgBoss;
  log: Logger;
  workerId: string;
  attempts: AttemptLog;
  pauses: PauseGate;
  hub: NotificationHub;
  /** Every job type this worker runs (the sweep settles theirs). */
  definitions: readonly RunnableJob[];
  /** How often the sweep settles jobs pg-boss failed on its own. */
  sweepMs: number;
  observer?: AttemptObserver | undefined;
}

/** Why an attempt stopped, as the handler's signal says it. */
const CANCELED = 'the job was canceled';

/**
 * Runs each fetched attempt the way every job is run (the protocol of CONVENTIONS §5):
 * 1. the pause gate; 2. the handler in a work context (log lines carry the job id and the request
 * that enqueued it), with a lease (src/jobs/lease.ts) for its steps and an abort signal that fires
 * on cancel (NOTIFY), lost lease and stop; 3. the end, in one transaction with the job's state:
 * its result through the kind's `succeeded` end and a fenced completion; a failure for good (last
 * attempt, or `failForGood`) through `failed` with the job `failed`, never `completed`; an attempt
 * that lost its lease writes nothing. Then the attempt goes into the history.
 */
export class JobRuntime {
  private readonly holding = new Map<string, HeldJob>();
  private sweepTimer: NodeJS.Timeout | null = null;
  private sweeping: Promise<void> = Promise.resolve();
  private stopping = false;

  private readonly parts: RuntimeParts;
  constructor(parts: RuntimeParts) {
    this.parts = parts;
  }

  held(): HeldJob[] {
    return [...this.holding.values()];
  }

  /** Starts the sweep that settles the resources of jobs pg-boss failed for good on its own (expired, heartbeat lost). */
  startSweep(): void {
    const { deps, definitions, log, sweepMs } = this.parts;
    const sweep = async () => {
      try {
        const settled = await settleAbandonedJobs(deps, definitions);
        if (settled) log.info({ settled }, 'settled jobs that failed for good without their worker');
      } catch (error) {
        log.debug({ err: error }, 'job sweep failed');
      }
    };
    this.sweepTimer = setInterval(() => {
      this.sweeping = this.sweeping.then(sweep);
    }, sweepMs);
    this.sweepTimer.unref();
  }

  /** No new end is applied by a stopping worker's interrupted attempts: they are retried (or handed back) instead. */
  async stop(): Promise<void> {
    this.stopping = true;
    if (this.sweepTimer) clearInterval(this.sweepTimer);
    await this.sweeping;
  }

  async run(definition: RunnableJob, attempt: Job<unknown>): Promise<unknown> {
    const { deps, db, log, workerId, attempts, pauses, observer } = this.parts;
    // A worker's claims mark their jobs as its own (./boss-sql/claims.ts): the history shows the
    // attempt from that mark, started when pg-boss says, and its row is written when it ends. A
    // fetch of another shape has its start written below, before the handler runs.
    const claim = attempt as Job<unknown> & { [CLAIM_RECORDED]?: boolean; [CLAIM_STARTED]?: Date };
    const claimRecorded = claim[CLAIM_RECORDED] === true;
    const began = new Date();
    const started = claimRecorded && claim[CLAIM_STARTED] ? new Date(claim[CLAIM_STARTED]) : began;
    // A job grouped by something else (a webhook endpoint) carries its organization in the payload.
    const organizationId = stampedOrganization(attempt.data) ?? attempt.groupId ?? null;
    const { payload: data, requestId, triggeredBy } = unstamp(attempt.data);
    // The attempt as the history names it: its job, its number, the worker running it.
    const which = {
      job_id: attempt.id,
      queue: attempt.name,
      organization_id: organizationId,
      attempt: attempt.retryCount,
      worker_id: workerId,
      started_at: started,
    };
    const record = (outcome: AttemptOutcome, error: AttemptRecord['error'] = null) =>
      attempts.record({
        ...which,
        ended_at: new Date(),
        outcome,
        error,
      });

    const pause = pauses.covering(attempt.name, organizationId);
    if (pause) {
      if (await deferFetched(db, attempt, pause)) {
        record('deferred', jobError('deferred', `deferred by pause ${pause.id}: ${pause.reason}`));
        observer?.attemptEnded(attempt.name, 'deferred', 0);
      } else if (claimRecorded) record('superseded', jobError('superseded', 'the job moved on before a pause could defer it'));
      return undefined;
    }
    if (definition.cron && !triggeredBy && pauses.schedulePaused(cronSchedule(definition.name))) {
      record('completed');
      return { skipped: 'the schedule is paused' };
    }

    const jobLog = log.child({ job_id: attempt.id, queue: attempt.name, attempt: attempt.retryCount, ...(requestId && { request_id: requestId }) });
    const cancel = new AbortController();
    const lease = new Lease(db, { queue: attempt.name, id: attempt.id, attempt: attempt.retryCount });
    // A notice on the job's key means "re-read": a cancel, or the hub's nudge to every subscriber after
    // it reconnected (notices sent while it was down are lost). The attempt stops only when its job is
    // really no longer its own; a read that fails (the database still away) leaves it running —
    // pg-boss's heartbeat finds a real cancel within half a heartbeat anyway.
    const recheck = () =>
      void db
        .transaction((trx) => lease.hold(trx))
        .then(
          () => undefined,
          (error: unknown) => {
            if (isLeaseLost(error)) cancel.abort(new Error(CANCELED));
          },
        );
    const unsubscribe = await this.parts.hub.subscribe(JOB_CONTROL_CHANNEL, attempt.id, { changed: recheck, close: () => undefined }).catch(() => null); // no NOTIFY now: pg-boss's heartbeat still finds the cancelled job within half a heartbeat
    this.holding.set(attempt.id, {
      job_id: attempt.id,
      queue: attempt.name,
      attempt: attempt.retryCount,
      organization_id: organizationId,
      started_at: started.toISOString(),
    });
    if (!claimRecorded) await attempts.started(which);
    observer?.attemptStarted(attempt.name);
    const lastAttempt = isLastAttempt(attempt, definition);
    const context = { job_id: attempt.id, queue: attempt.name, ...(requestId && { request_id: requestId }) };
    const ms = () => Date.now() - began.getTime();
    // A cron job's routine end is debug: an idle service would otherwise log dozens of lines a minute.
    const ended = definition.cron ? 'debug' : 'info';
    try {
      const result = await runInWorkContext(context, () =>
        runJob(definition, data, {
          deps,
          job: attempt,
          log: jobLog,
          signal: AbortSignal.any([attempt.signal, cancel.signal]),
          step: (work) => lease.step(work),
        }),
      );
      if (isSnoozed(result)) return await this.snoozed(attempt, result, { record, log: jobLog });
      if (isNothingToDo(result)) jobLog[ended]({ ms: ms(), why: whyNothing(result) }, 'job had nothing to do');
      else if (definition.ends || continuationOf(attempt.data))
        await runInWorkContext(context, () =>
          succeed(deps, lease, definition, definition.payload.parse(data), result, { data: attempt.data, group_id: attempt.groupId ?? null }),
        );
      record('completed');
      observer?.attemptEnded(attempt.name, 'completed', seconds(began));
      jobLog[ended]({ ms: ms() }, 'job done');
      // pg-boss completes the job now unless the end above did (then its fenced completion changes nothing).
      return undefined;
    } catch (error) {
      // A wait longer than its bound (./waits.ts): the same job continues later, holding no slot meanwhile.
      if (isContinueLater(error) && !cancel.signal.aborted && !attempt.signal.aborted)
        return await this.snoozed(attempt, snooze(error.seconds, error.why), { record, log: jobLog });
      // An upstream without capacity now (a provider limit, a 429): the job waits queued, using no attempt.
      if (isUpstreamBusy(error) && !cancel.signal.aborted && !attempt.signal.aborted)
        return await this.snoozed(attempt, snooze(error.seconds, error.message), { record, log: jobLog });
      return await this.ended(definition, attempt, lease, data, error, { lastAttempt, canceled: cancel.signal.aborted, record, log: jobLog, started: began });
    } finally {
      this.holding.delete(attempt.id);
      unsubscribe?.();
    }
  }

  /**
   * The handler asked to run again later: the job goes back to wait, no retry used, and the attempt
   * is recorded `deferred` with the handler's reason. One that is no longer this attempt's (canceled
   * meanwhile) is left as it is, and the attempt recorded superseded.
   */
  private async snoozed(
    attempt: Job<unknown>,
    result: Snoozed,
    how: { record: (outcome: AttemptOutcome, error?: AttemptRecord['error']) => void; log: Logger },
  ) {
    const { seconds, why } = snoozeOf(result);
    if (await snoozeAttempt(this.parts.db, { queue: attempt.name, id: attempt.id, attempt: attempt.retryCount }, seconds)) {
      how.record('deferred', jobError('snoozed', `snoozed for ${seconds} s: ${why}`));
      this.parts.observer?.attemptEnded(attempt.name, 'deferred', 0);
      how.log.info({ seconds, why }, 'job snoozed');
    } else how.record('superseded', jobError('superseded', 'the job moved on before it could be snoozed'));
    return undefined;
  }

  /** Whether pg-boss will not retry this attempt's job (read under the lease: LeaseLost when it is no longer ours). */
  private noRetryLeft(lease: Lease): Promise<boolean> {
    return this.parts.db.transaction(async (trx) => {
      const job = await lease.hold(trx);
      return job.retry_count >= job.retry_limit;
    });
  }

  /**
   * An attempt that threw. A lost lease (canceled, expired, retried elsewhere) ends it quietly: the
   * job's new owner writes. A failure for good — `failForGood`, or any error on the last attempt —
   * ends the job `failed` with its resource's end. Anything else is rethrown for pg-boss to retry.
   */
  private async ended(
    definition: RunnableJob,
    attempt: Job<unknown>,
    lease: Lease,
    data: unknown,
    error: unknown,
    how: {
      lastAttempt: boolean;
      canceled: boolean;
      record: (outcome: AttemptOutcome, error?: AttemptRecord['error']) => void;
      log: Logger;
      started: Date;
    },
  ): Promise<unknown> {
    const { deps, observer } = this.parts;
    const superseded = () => {
      how.record(how.canceled ? 'cancelled' : 'superseded', attemptError(error));
      observer?.attemptEnded(attempt.name, 'failed', seconds(how.started));
      how.log.info({ reason: error instanceof Error ? error.message : String(error) }, 'job attempt stopped: it no longer holds its job');
      return undefined;
    };
    if (this.stopping && attempt.signal.aborted) {
      // The worker is stopping and handed the attempt back (no attempt used): another worker runs it.
      how.record('deferred', jobError('handed_back', 'handed back: the worker stopped before the attempt finished'));
      how.log.info('job attempt handed back: the worker is stopping');
      return undefined;
    }
    // pg-boss aborts an attempt's signal when its heartbeat finds the claim gone (retried elsewhere after a freeze): superseded too.
    if (isLeaseLost(error) || how.canceled || attempt.signal.aborted) return superseded();
    let forGood: boolean;
    try {
      // The job row's own retry limit decides (a queue's policy may have changed since the job was sent).
      forGood = isJobFailure(error) || (!this.stopping && (how.lastAttempt || (await this.noRetryLeft(lease))));
    } catch (failure) {
      if (isLeaseLost(failure)) return superseded();
      throw failure;
    }
    const failed = () => {
      how.record('failed', attemptError(error));
      observer?.attemptEnded(attempt.name, 'failed', seconds(how.started));
    };
    if (!forGood) {
      failed();
      // pg-boss keeps only the last attempt's output: the history and the log keep each one.
      how.log.warn({ err: error, ms: Date.now() - how.started.getTime() }, 'job attempt failed');
      // pg-boss stores what it is handed (stack and all): it gets the redacted record instead.
      throw new StoredJobError(jobErrorRecord(error));
    }
    // The resource's own end keeps the handler's words (its tenant sees them); the job's records redact them (./ends.ts).
    const reason: EndReason = isJobFailure(error)
      ? { code: error.code, message: error.message }
      : { code: snakeCode(error) ?? 'failed', message: error instanceof Error ? error.message : String(error) };
    try {
      await failForGood(deps, lease, definition, definition.payload.parse(data), reason);
    } catch (failure) {
      if (isLeaseLost(failure)) return superseded();
      throw failure;
    }
    failed();
    how.log.warn({ err: error, code: reason.code }, 'job failed for good');
    return undefined;
  }
}

const seconds = (since: Date) => (Date.now() - since.getTime()) / 1000;
