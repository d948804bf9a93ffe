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
 * Writes attempt records (started or finished), many rows in one statement. An attempt already
 * recorded (a sweep recorded it `lost` while its worker was frozen, before its start was written)
 * keeps that record.
 */
export async function insertAttempts(db: Knex | Knex.Transaction, records: readonly AttemptRecord[]): Promise<void> {
  if (records.length === 0) return;
  await db.raw(
    `INSERT INTO job_attempts (job_id, queue, organization_id, attempt, worker_id, started_at, ended_at, outcome, error)
     SELECT x.job_id, x.queue, x.organization_id, x.attempt, x.worker_id, x.started_at, x.ended_at, x.outcome, x.error FROM ${RECORDSET}
     ON CONFLICT DO NOTHING`,
    [JSON.stringify(records)],
  );
}

/**
 * Attempts pg-boss counted that no worker recorded — fetched by a worker killed before it could
 * write the start (milliseconds), so no handler ran — are recorded `lost`, with no worker, when a
 * later attempt of the same job begins. Rows of attempts that began are never touched.
 */
async function recordUnseenAttempts(db: Knex | Knex.Transaction, starts: readonly AttemptRecord[]): Promise<void> {
  const retried = starts.filter((record) => record.attempt > 0);
  if (retried.length === 0) return;
  await db.raw(
    `INSERT INTO job_attempts (job_id, queue, organization_id, attempt, worker_id, started_at, ended_at, outcome, error)
     SELECT x.job_id, x.queue, x.organization_id, k, NULL, x.started_at, x.started_at, 'lost', ?::jsonb
       FROM ${RECORDSET}, generate_series(0, x.attempt - 1) AS k
      WHERE NOT EXISTS (SELECT 1 FROM job_attempts a WHERE a.job_id = x.job_id AND a.attempt = k)
     ON CONFLICT DO NOTHING`,
    [JSON.stringify(UNSEEN_ATTEMPT), JSON.stringify(retried)],
  );
}

/** The error of an attempt pg-boss counted that no worker recorded. */
export const UNSEEN_ATTEMPT = jobError('lost', 'no worker recorded this attempt: the worker that fetched it stopped before it began');

/** Fills in the end of attempts whose start was written, in one statement. */
async function endAttempts(db: Knex | Knex.Transaction, records: readonly FinishedAttempt[]): Promise<void> {
  if (records.length === 0) return;
  await db.raw(
    `UPDATE job_attempts a SET ended_at = x.ended_at, outcome = x.outcome, error = x.error
       FROM ${RECORDSET}
      WHERE a.job_id = x.job_id AND a.attempt = x.attempt AND a.worker_id = x.worker_id AND a.ended_at IS NULL`,
    [JSON.stringify(records)],
  );
}

const keyOf = (record: Pick<AttemptRecord, 'job_id' | 'attempt'>) => `${record.job_id}:${record.attempt}`;

/**
 * pg-boss keeps only a job's last output; the attempt history is ours. A worker writes each
 * attempt before its handler runs — so a worker killed mid-attempt leaves it in the history,
 * credited to itself, for the sweep to mark `lost` — and fills in its end when it ends. Starts go
 * out on the next turn of the event loop (together, one statement); ends are buffered and sent
 * every `flushMs` (or at `maxBuffered`), many rows a statement. While the database cannot be
 * written, records are kept for the next flush and the jobs run on (history is not worth a stall).
 */
export class AttemptLog {
  /** Attempts to insert (begun, or ended without a written start), by job and attempt. */
  private starts = new Map<string, AttemptRecord>();
  /** Attempts whose start is written (or being written) and whose end is not yet known. */
  private readonly open = new Set<string>();
  private ends: FinishedAttempt[] = [];
  private timer: NodeJS.Timeout | null = null;
  /** The flush on the next turn of the event loop that the starts waiting now go out with. */
  private soon: Promise<void> | null = null;
  private flushing: Promise<void> = Promise.resolve();
  private failing = false;

  constructor(
    private readonly db: Knex,
    private readonly log: Logger,
    private readonly flushMs = 100,
    private readonly maxBuffered = 500,
  ) {}

  /**
   * The attempt begins (after the pause gate). Resolves once its start is written — the runtime
   * waits for it before the handler runs, so no attempt a SIGKILL interrupts is missing from the
   * history. Starts arriving together (every slot of a busy worker) share one statement.
   */
  started(record: Omit<AttemptRecord, 'ended_at' | 'outcome' | 'error'>): Promise<void> {
    this.starts.set(keyOf(record), { ...record, ended_at: null, outcome: null, error: null });
    this.soon ??= new Promise((resolve) =>
      setImmediate(() => {
        this.soon = null;
        resolve(this.flush());
      }),
    );
    return this.soon;
  }

  /**
   * The attempt's start was written by the claim that fetched it (./boss-sql/claims.ts): nothing to
   * write now; its end completes that row.
   */
  claimed(record: Pick<AttemptRecord, 'job_id' | 'attempt'>): void {
    this.open.add(keyOf(record));
  }

  /** The attempt ended (or, deferred by a pause, never began): its start is completed, or the whole attempt written. */
  record(record: FinishedAttempt): void {
    const key = keyOf(record);
    if (this.open.delete(key)) this.ends.push(record);
    else this.starts.set(key, record);
    this.schedule();
  }

  private schedule(): void {
    if (this.starts.size + this.ends.length >= this.maxBuffered) void this.flush();
    else this.timer ??= setTimeout(() => void this.flush(), this.flushMs);
  }

  /** A batch that was not written goes back in front of what arrived since (an end that arrived since completes its start). */
  private putBack(inserts: readonly AttemptRecord[], ends: readonly FinishedAttempt[]): void {
    for (const record of inserts) this.open.delete(keyOf(record));
    const starts = new Map(inserts.map((record) => [keyOf(record), record] as const));
    for (const [key, record] of this.starts) starts.set(key, record);
    const leftover: FinishedAttempt[] = [];
    for (const record of [...ends, ...this.ends]) {
      if (starts.has(keyOf(record))) starts.set(keyOf(record), record);
      else leftover.push(record);
    }
    this.starts = starts;
    this.ends = leftover.slice(-this.maxBuffered * 10);
  }

  /** Writes what is buffered: starts (and whole attempts) first, then the ends of attempts written before. */
  flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const inserts = [...this.starts.values()];
    const ends = this.ends;
    this.starts = new Map();
    this.ends = [];
    // Their ends, from now on, are updates of the rows this flush writes.
    for (const record of inserts) if (record.outcome === null) this.open.add(keyOf(record));
    this.flushing = this.flushing.then(async () => {
      if (inserts.length === 0 && ends.length === 0) return;
      try {
        // One statement (the usual flush: the starts of one turn of the event loop, or a batch of ends) needs no transaction.
        const retried = inserts.some((record) => record.attempt > 0);
        if (Number(inserts.length > 0) + Number(retried) + Number(ends.length > 0) === 1) {
          await insertAttempts(this.db, inserts);
          await endAttempts(this.db, ends);
        } else
          await this.db.transaction(async (trx) => {
            await insertAttempts(trx, inserts);
            await recordUnseenAttempts(trx, inserts);
            await endAttempts(trx, ends);
          });
        this.failing = false;
      } catch (error) {
        // One warning per outage (the worker's database watch reports the outage itself), then quiet retries.
        (this.failing ? this.log.debug : this.log.warn).call(
          this.log,
          { err: error, records: inserts.length + ends.length },
          'attempt history: write failed; keeping the records for the next flush',
        );
        this.failing = true;
        this.putBack(inserts, ends);
        this.timer ??= setTimeout(() => void this.flush(), this.flushMs * 10);
      }
    });
    return this.flushing;
  }
}

/** The error as the history keeps it: the redacted record (./error-record.ts), never a stack. */
export const attemptError = (error: unknown): JobErrorRecord => jobErrorRecord(error);
