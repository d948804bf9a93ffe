import type { Knex } from 'knex';
import type { Logger } from '../platform/logger.ts';
import { jobError, jobErrorRecord, type JobErrorRecord } from './error-record.ts';

export type AttemptOutcome = 'completed' | 'failed' | 'deferred' | 'lost' | 'cancelled' | 'superseded';

/** One attempt of one job, as the console's attempt history shows it; `ended_at`/`outcome` are null while it runs. */
export interface AttemptRecord {
  job_id: string;
  queue: string;
  organization_id: string | null;
  attempt: number;
  worker_id: string | null;
  started_at: Date;
  ended_at: Date | null;
  outcome: AttemptOutcome | null;
  /** Redacted (./error-record.ts): no e-mail address, path, secret or stack. */
  error: JobErrorRecord | null;
}

export type FinishedAttempt = AttemptRecord & { ended_at: Date; outcome: AttemptOutcome };

const RECORDSET = `jsonb_to_recordset(?::jsonb) AS x(job_id uuid, queue text, organization_id text, attempt integer, worker_id uuid,
                                                    started_at timestamptz, ended_at timestamptz, outcome text, error jsonb)`;

/**
 * Writes attempt records (started or finished) found by a sweep, many rows in one statement. An
 * attempt already recorded (its worker's own record, or another sweep's) keeps that record; one
 * recorded open (written when pg-boss failed its job under it) is closed by a finished record.
 */
export async function insertAttempts(db: Knex | Knex.Transaction, records: readonly AttemptRecord[]): Promise<void> {
  if (records.length === 0) return;
  await db.raw(
    `INSERT INTO job_attempt_records AS a (job_id, queue, organization_id, attempt, worker_id, started_at, ended_at, outcome, error)
     SELECT x.job_id, x.queue, x.organization_id, x.attempt, x.worker_id, x.started_at, x.ended_at, x.outcome, x.error FROM ${RECORDSET}
     ON CONFLICT (job_id, attempt) WHERE outcome IS DISTINCT FROM 'deferred'
     DO UPDATE SET ended_at = EXCLUDED.ended_at, outcome = EXCLUDED.outcome, error = EXCLUDED.error
      WHERE a.ended_at IS NULL AND EXCLUDED.ended_at IS NOT NULL`,
    [JSON.stringify(records)],
  );
}

/**
 * A worker's own records, many rows in one statement: each attempt's whole row when it ends (its
 * start was the claim's mark on the job, ./boss-sql/claims.ts), or its start when no claim marked
 * it. A record completes the open row of the same attempt by the same worker — its own start, or
 * the row written when its job was failed or snoozed under it (./boss-sql/claims.ts, attempts.ts) —
 * and a snooze's `deferred` record takes the place of the row its snooze wrote; a record a sweep
 * closed (the worker was declared lost) stays as the sweep wrote it.
 */
async function writeOwnAttempts(db: Knex | Knex.Transaction, records: readonly AttemptRecord[]): Promise<void> {
  if (records.length === 0) return;
  await db.raw(
    `WITH x AS MATERIALIZED (SELECT * FROM ${RECORDSET}),
     deferred AS (
       DELETE FROM job_attempt_records a USING x
        WHERE x.outcome = 'deferred' AND a.job_id = x.job_id AND a.attempt = x.attempt AND a.worker_id = x.worker_id AND a.ended_at IS NULL
     )
     INSERT INTO job_attempt_records AS a (job_id, queue, organization_id, attempt, worker_id, started_at, ended_at, outcome, error)
     SELECT x.job_id, x.queue, x.organization_id, x.attempt, x.worker_id, x.started_at, x.ended_at, x.outcome, x.error FROM x
     ON CONFLICT (job_id, attempt) WHERE outcome IS DISTINCT FROM 'deferred'
     DO UPDATE SET ended_at = EXCLUDED.ended_at, outcome = EXCLUDED.outcome, error = EXCLUDED.error
      WHERE a.ended_at IS NULL AND a.worker_id IS NOT DISTINCT FROM EXCLUDED.worker_id`,
    [JSON.stringify(records)],
  );
}

/**
 * Attempts pg-boss counted that no worker recorded — fetched by a worker killed before it could
 * write the start (milliseconds), so no handler ran — are recorded `lost`, with no worker, when a
 * later attempt of the same job begins. Rows of attempts that began are never touched. (An attempt
 * a claim marked is in the history from the mark on: this is for fetches of another shape.)
 */
async function recordUnseenAttempts(db: Knex | Knex.Transaction, starts: readonly AttemptRecord[]): Promise<void> {
  const retried = starts.filter((record) => record.attempt > 0 && record.outcome === null);
  if (retried.length === 0) return;
  await db.raw(
    `INSERT INTO job_attempt_records (job_id, queue, organization_id, attempt, worker_id, started_at, ended_at, outcome, error)
     SELECT x.job_id, x.queue, x.organization_id, k, NULL, x.started_at, x.started_at, 'lost', ?::jsonb
       FROM ${RECORDSET}, generate_series(0, x.attempt - 1) AS k
      WHERE NOT EXISTS (SELECT 1 FROM job_attempts a WHERE a.job_id = x.job_id AND a.attempt = k)
     ON CONFLICT DO NOTHING`,
    [JSON.stringify(UNSEEN_ATTEMPT), JSON.stringify(retried)],
  );
}

/** The error of an attempt pg-boss counted that no worker recorded. */
export const UNSEEN_ATTEMPT = jobError('lost', 'no worker recorded this attempt: the worker that fetched it stopped before it began');

const keyOf = (record: Pick<AttemptRecord, 'job_id' | 'attempt'>) => `${record.job_id}:${record.attempt}`;

/**
 * pg-boss keeps only a job's last output; the attempt history is ours. While an attempt runs the
 * history shows it from the claim's mark on its job (./boss-sql/claims.ts) — so a worker killed
 * mid-attempt leaves it in the history, credited to itself, for the sweep to record `lost` — and
 * its worker writes its row when it ends: buffered and sent every `flushMs` (or at `maxBuffered`),
 * many rows a statement, off the slot's path from one job to the next. An attempt of a fetch no
 * claim marked has its start written before its handler runs (`started`). While the database
 * cannot be written, records are kept for the next flush and the jobs run on (history is not
 * worth a stall).
 */
export class AttemptLog {
  /** Records to write, by job and attempt (an end replaces its attempt's start). */
  private pending = new Map<string, AttemptRecord>();
  private timer: NodeJS.Timeout | null = null;
  /** The flush on the next turn of the event loop that the starts waiting now go out with. */
  private soon: Promise<void> | null = null;
  private flushing: Promise<void> = Promise.resolve();
  private failing = false;

  private readonly db: Knex;
  private readonly log: Logger;
  private readonly flushMs: number;
  private readonly maxBuffered: number;
  constructor(db: Knex, log: Logger, flushMs = 100, maxBuffered = 500) {
    this.db = db;
    this.log = log;
    this.flushMs = flushMs;
    this.maxBuffered = maxBuffered;
  }

  /**
   * An attempt no claim marked begins (after the pause gate). Resolves once its start is written —
   * the runtime waits for it before the handler runs, so no attempt a SIGKILL interrupts is missing
   * from the history. Starts arriving together share one statement.
   */
  started(record: Omit<AttemptRecord, 'ended_at' | 'outcome' | 'error'>): Promise<void> {
    this.pending.set(keyOf(record), { ...record, ended_at: null, outcome: null, error: null });
    this.soon ??= new Promise((resolve) =>
      setImmediate(() => {
        this.soon = null;
        resolve(this.flush());
      }),
    );
    return this.soon;
  }

  /** The attempt ended (or, deferred by a pause, never began): its row is written with the next flush. */
  record(record: FinishedAttempt): void {
    this.pending.set(keyOf(record), record);
    if (this.pending.size >= this.maxBuffered) void this.flush();
    else this.timer ??= setTimeout(() => void this.flush(), this.flushMs);
  }

  /** A batch that was not written goes back, behind what arrived since for the same attempts. */
  private putBack(batch: readonly AttemptRecord[]): void {
    const pending = new Map(batch.map((record) => [keyOf(record), record] as const));
    for (const [key, record] of this.pending) pending.set(key, record);
    this.pending = new Map([...pending].slice(-this.maxBuffered * 10));
  }

  /** Writes what is buffered. */
  flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const batch = [...this.pending.values()];
    this.pending = new Map();
    this.flushing = this.flushing.then(async () => {
      if (batch.length === 0) return;
      try {
        // One statement (the usual flush) needs no transaction.
        if (batch.some((record) => record.attempt > 0 && record.outcome === null))
          await this.db.transaction(async (trx) => {
            await writeOwnAttempts(trx, batch);
            await recordUnseenAttempts(trx, batch);
          });
        else await writeOwnAttempts(this.db, batch);
        this.failing = false;
      } catch (error) {
        // One warning per outage (the worker's database watch reports the outage itself), then quiet retries.
        (this.failing ? this.log.debug : this.log.warn).call(
          this.log,
          { err: error, records: batch.length },
          'attempt history: write failed; keeping the records for the next flush',
        );
        this.failing = true;
        this.putBack(batch);
        this.timer ??= setTimeout(() => void this.flush(), this.flushMs * 10);
      }
    });
    return this.flushing;
  }
}

/** The error as the history keeps it: the redacted record (./error-record.ts), never a stack. */
export const attemptError = (error: unknown): JobErrorRecord => jobErrorRecord(error);
