import type { Knex } from 'knex';
import type { Logger } from '../platform/logger.ts';

/** One finished attempt of one job, as the console's attempt history shows it. */
export interface AttemptRecord {
  job_id: string;
  queue: string;
  organization_id: string | null;
  attempt: number;
  worker_id: string | null;
  started_at: Date;
  ended_at: Date;
  outcome: 'completed' | 'failed' | 'deferred' | 'lost' | 'cancelled' | 'superseded';
  error: { message: string; name?: string } | null;
}

/** Writes attempt records, many rows in one statement. */
export async function insertAttempts(db: Knex | Knex.Transaction, records: readonly AttemptRecord[]): Promise<void> {
  if (records.length === 0) return;
  await db.raw(
    `INSERT INTO job_attempts (job_id, queue, organization_id, attempt, worker_id, started_at, ended_at, outcome, error)
     SELECT x.job_id, x.queue, x.organization_id, x.attempt, x.worker_id, x.started_at, x.ended_at, x.outcome, x.error
       FROM jsonb_to_recordset(?::jsonb) AS x(job_id uuid, queue text, organization_id text, attempt integer, worker_id uuid,
                                             started_at timestamptz, ended_at timestamptz, outcome text, error jsonb)`,
    [JSON.stringify(records)],
  );
}

/**
 * pg-boss keeps only a job's last output; the attempt history is ours. A worker buffers its
 * finished attempts and writes them in one statement every `flushMs` (or at `maxBuffered`), so
 * the history costs one insert per batch, not one per job. Records still buffered when a worker
 * is SIGKILLed are lost — the job itself is not (pg-boss retries it), and the sweep that finds
 * the worker lost records its held attempts as `lost`.
 */
export class AttemptLog {
  private buffer: AttemptRecord[] = [];
  private timer: NodeJS.Timeout | null = null;
  private flushing: Promise<void> = Promise.resolve();
  private failing = false;

  constructor(
    private readonly db: Knex,
    private readonly log: Logger,
    private readonly flushMs = 250,
    private readonly maxBuffered = 500,
  ) {}

  record(record: AttemptRecord): void {
    this.buffer.push(record);
    if (this.buffer.length >= this.maxBuffered) void this.flush();
    else this.timer ??= setTimeout(() => void this.flush(), this.flushMs);
  }

  /** Writes what is buffered; on a database error the records are kept for the next flush (up to 10× the batch). */
  flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const batch = this.buffer;
    this.buffer = [];
    this.flushing = this.flushing.then(async () => {
      if (batch.length === 0) return;
      try {
        await insertAttempts(this.db, batch);
        this.failing = false;
      } catch (error) {
        // One warning per outage (the worker's database watch reports the outage itself), then quiet retries.
        (this.failing ? this.log.debug : this.log.warn).call(
          this.log,
          { err: error, records: batch.length },
          'attempt history: write failed; keeping the records for the next flush',
        );
        this.failing = true;
        this.buffer = [...batch, ...this.buffer].slice(-this.maxBuffered * 10);
        this.timer ??= setTimeout(() => void this.flush(), this.flushMs * 4);
      }
    });
    return this.flushing;
  }
}

/** The error as the history keeps it: the message and class, never a stack (it may carry paths and secrets). */
export function attemptError(error: unknown): AttemptRecord['error'] {
  if (error instanceof Error) return { message: error.message.slice(0, 2000), name: error.name };
  return { message: String(error).slice(0, 2000) };
}
