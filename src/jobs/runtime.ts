import type { Knex } from 'knex';
import type { Job, PgBoss } from 'pg-boss';
import type { NotificationHub } from '../db/notifications.ts';
import type { Deps } from '../platform/deps.ts';
import type { Logger } from '../platform/logger.ts';
import { runInWorkContext } from '../platform/work-context.ts';
import { attemptError, type AttemptLog, type AttemptRecord } from './attempts.ts';
import { runJob, type JobDefinition } from './define.ts';
import { unstamp } from './origin.ts';
import { cronSchedule, deferFetched, type PauseGate } from './pauses.ts';
import type { HeldJob } from './worker-registry.ts';

/** Operators' cooperative cancel: the console notifies this channel with the job id as key. */
export const JOB_CONTROL_CHANNEL = 'job_control';

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
  observer?: AttemptObserver | undefined;
}

/**
 * Runs each fetched attempt the way every job is run: the pause gate first, then the handler in a
 * work context (its log lines carry the job id and the request that enqueued it), with an abort
 * signal that also fires when an operator cancels the job; then the attempt is written to the
 * history. The jobs held right now are what the worker's heartbeat reports.
 */
export class JobRuntime {
  private readonly holding = new Map<string, HeldJob>();

  constructor(private readonly parts: RuntimeParts) {}

  held(): HeldJob[] {
    return [...this.holding.values()];
  }

  async run(definition: JobDefinition, attempt: Job<unknown>): Promise<unknown> {
    const { deps, db, log, workerId, attempts, pauses, observer } = this.parts;
    const started = new Date();
    const organizationId = attempt.groupId ?? null;
    const { payload, requestId, triggeredBy } = unstamp(attempt.data);
    const record = (outcome: AttemptRecord['outcome'], error: AttemptRecord['error'] = null) =>
      attempts.record({
        job_id: attempt.id,
        queue: attempt.name,
        organization_id: organizationId,
        attempt: attempt.retryCount,
        worker_id: workerId,
        started_at: started,
        ended_at: new Date(),
        outcome,
        error,
      });

    const pause = pauses.covering(attempt.name, organizationId);
    if (pause) {
      if (await deferFetched(db, attempt, pause)) {
        record('deferred', { message: `deferred by pause ${pause.id}: ${pause.reason}` });
        observer?.attemptEnded(attempt.name, 'deferred', 0);
      }
      return undefined;
    }
    if (definition.cron && !triggeredBy && pauses.schedulePaused(cronSchedule(definition.name))) {
      record('completed');
      return { skipped: 'the schedule is paused' };
    }

    const jobLog = log.child({ job_id: attempt.id, queue: attempt.name, attempt: attempt.retryCount, ...(requestId && { request_id: requestId }) });
    const cancel = new AbortController();
    const unsubscribe = await this.parts.hub
      .subscribe(JOB_CONTROL_CHANNEL, attempt.id, { changed: () => cancel.abort(new Error('cancelled by an operator')), close: () => undefined })
      .catch(() => null); // no NOTIFY now: pg-boss's heartbeat still aborts a cancelled job within half a heartbeat
    this.holding.set(attempt.id, {
      job_id: attempt.id,
      queue: attempt.name,
      attempt: attempt.retryCount,
      organization_id: organizationId,
      started_at: started.toISOString(),
    });
    observer?.attemptStarted(attempt.name);
    const context = { job_id: attempt.id, queue: attempt.name, ...(requestId && { request_id: requestId }) };
    try {
      await runInWorkContext(context, () =>
        runJob(definition, payload, { deps, job: attempt, log: jobLog, signal: AbortSignal.any([attempt.signal, cancel.signal]) }),
      );
      record('completed');
      observer?.attemptEnded(attempt.name, 'completed', seconds(started));
      jobLog.info({ ms: Date.now() - started.getTime() }, 'job done');
      return undefined;
    } catch (error) {
      record(cancel.signal.aborted ? 'cancelled' : 'failed', attemptError(error));
      observer?.attemptEnded(attempt.name, 'failed', seconds(started));
      // pg-boss keeps only the last attempt's output: the history and the log keep each one.
      jobLog.warn({ err: error, ms: Date.now() - started.getTime() }, 'job attempt failed');
      throw error;
    } finally {
      this.holding.delete(attempt.id);
      unsubscribe?.();
    }
  }
}

const seconds = (since: Date) => (Date.now() - since.getTime()) / 1000;
