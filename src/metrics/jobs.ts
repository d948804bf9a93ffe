import { Counter, Histogram, type Registry } from 'prom-client';

/** How a job attempt ended: done, failed (it may still be retried), or handed back to run later. */
export type JobOutcome = 'completed' | 'failed' | 'deferred';

/**
 * Job attempts as the worker runtime sees them. Counted in process, not read from pg-boss's tables:
 * rates per queue and durations come for free and cost no query. `started - completed - failed -
 * deferred` is what is running now. Queue backlogs come from the database instead (./queues.ts).
 */
export class JobMetrics {
  private readonly started: Counter<'queue'>;
  private readonly completed: Counter<'queue'>;
  private readonly failed: Counter<'queue'>;
  private readonly duration: Histogram<'queue' | 'outcome'>;

  constructor(registry: Registry) {
    const registers = [registry];
    this.started = new Counter({ name: 'jobs_started_total', help: 'Job attempts started, by queue', labelNames: ['queue'], registers });
    this.completed = new Counter({ name: 'jobs_completed_total', help: 'Job attempts that completed, by queue', labelNames: ['queue'], registers });
    this.failed = new Counter({ name: 'jobs_failed_total', help: 'Job attempts that failed (retried or not), by queue', labelNames: ['queue'], registers });
    this.duration = new Histogram({
      name: 'job_duration_seconds',
      help: 'Duration of job attempts, by queue and outcome',
      labelNames: ['queue', 'outcome'],
      // Jobs range from milliseconds (e-mails) to minutes (generations, imports).
      buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600],
      registers,
    });
  }

  attemptStarted(queue: string): void {
    this.started.inc({ queue });
  }

  attemptEnded(queue: string, outcome: JobOutcome, seconds: number): void {
    if (outcome === 'completed') this.completed.inc({ queue });
    else if (outcome === 'failed') this.failed.inc({ queue });
    this.duration.observe({ queue, outcome }, seconds);
  }
}
