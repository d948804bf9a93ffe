/**
 * The worker's stream coalescer: every chat turn the process runs hands its model's text here, and
 * every CHAT_STREAM_TICK_MS one statement writes what all of them added since the last tick — an
 * UPDATE … FROM (VALUES …) appending to each run's snapshot — and sends one NOTIFY naming the
 * conversations that advanced. The database sees one write and one notification per tick per
 * worker, however many turns stream and however fast their tokens come (a batch over
 * ROWS_PER_STATEMENT runs is split, keeping each NOTIFY's payload under Postgres's 8000 bytes).
 *
 * Order and fencing. One statement is in flight at a time, so a run's text lands in order. A
 * round's first text replaces the snapshot (bumping the run's `stream_epoch` when it was not
 * empty); later texts append only while the run is still at the epoch that write returned, still
 * `running`, and its job still this attempt's — so a superseded attempt, a stopped run or a run
 * already ended (its end writes the whole answer, as before) is never written to. A snapshot
 * replaced by someone else (POST /run/snapshot) is replaced again by the round's whole text.
 *
 * Memory. A turn's unsent text is capped (CHAT_STREAM_BUFFER_CHARS): over it, the turn's
 * `append` waits — and with it the turn's read of the model — until a tick has written it.
 */
import type { Job } from 'pg-boss';
import type { Db } from '../db/knex.ts';
import { attemptsOwnJobsSql } from '../jobs/boss-sql/index.ts';
import type { Deps } from '../platform/deps.ts';
import { RUN_EVENTS_CHANNEL } from './run-notify.ts';

/** A conversation id is 39 bytes of the NOTIFY's JSON: 150 of them stay well under its 8000-byte limit. */
const ROWS_PER_STATEMENT = 150;

export interface TurnStream {
  /**
   * The round's text so far (the last one extended). Resolves at once, unless the part not yet
   * written is over the cap: then once a tick wrote it.
   */
  publish(text: string): Promise<void>;
  /** A new round: its text starts the snapshot anew. */
  restart(): void;
  /** No more writes: text not yet written is dropped (the run's end writes the whole answer). */
  close(): void;
}

interface Turn {
  runId: string;
  conversationId: string;
  queue: string;
  jobId: string;
  attempt: number;
  /** The round's text so far, and how much of it the snapshot holds. */
  text: string;
  sent: number;
  round: number;
  /** The next write replaces the snapshot. */
  restart: boolean;
  /** The epoch this turn's appends belong to (known once its replacing write returned). */
  epoch: number | null;
  waiters: (() => void)[];
  closed: boolean;
}

interface Written {
  turn: Turn;
  text: string;
  replace: boolean;
  round: number;
  upTo: number;
}

export class StreamCoalescer {
  private readonly turns = new Set<Turn>();
  private timer: NodeJS.Timeout | null = null;
  private writing = false;
  private lastTick = 0;
  /** Statements written (each with at most one NOTIFY): for tests and benchmarks. */
  writes = 0;

  private readonly deps: Pick<Deps, 'db' | 'log'>;
  private readonly tickMs: number;
  private readonly bufferChars: number;
  constructor(deps: Pick<Deps, 'db' | 'log'>, tickMs: number, bufferChars: number) {
    this.deps = deps;
    this.tickMs = tickMs;
    this.bufferChars = bufferChars;
  }

  open(run: { id: string; conversation_id: string }, job: Pick<Job<unknown>, 'name' | 'id' | 'retryCount'>): TurnStream {
    const turn: Turn = {
      runId: run.id,
      conversationId: run.conversation_id,
      queue: job.name,
      jobId: job.id,
      attempt: job.retryCount,
      text: '',
      sent: 0,
      round: 0,
      restart: true,
      epoch: null,
      waiters: [],
      closed: false,
    };
    this.turns.add(turn);
    return {
      publish: (text) => {
        if (turn.closed) return Promise.resolve();
        turn.text = text;
        this.schedule();
        if (this.unsent(turn) <= this.bufferChars) return Promise.resolve();
        return new Promise((resolve) => turn.waiters.push(resolve));
      },
      restart: () => {
        turn.text = '';
        turn.sent = 0;
        turn.round += 1;
        turn.restart = true;
      },
      close: () => this.drop(turn),
    };
  }

  private drop(turn: Turn) {
    turn.closed = true;
    turn.text = '';
    this.turns.delete(turn);
    this.release(turn);
  }

  private release(turn: Turn) {
    if (this.unsent(turn) > this.bufferChars && !turn.closed) return;
    for (const resolve of turn.waiters.splice(0)) resolve();
  }

  private unsent = (turn: Turn) => (turn.restart ? turn.text.length : turn.text.length - turn.sent);

  private ready = (turn: Turn) => (turn.restart ? turn.text !== '' : turn.epoch !== null && turn.text.length > turn.sent);

  private schedule() {
    if (this.timer || this.writing) return;
    this.timer = setTimeout(() => void this.tick(), Math.max(0, this.tickMs - (Date.now() - this.lastTick)));
    this.timer.unref();
  }

  private async tick() {
    this.timer = null;
    this.writing = true;
    this.lastTick = Date.now();
    try {
      const batch: Written[] = [];
      for (const turn of this.turns) {
        if (!this.ready(turn)) continue;
        batch.push({ turn, text: turn.restart ? turn.text : turn.text.slice(turn.sent), replace: turn.restart, round: turn.round, upTo: turn.text.length });
        turn.restart = false;
      }
      for (let i = 0; i < batch.length; i += ROWS_PER_STATEMENT) await this.write(batch.slice(i, i + ROWS_PER_STATEMENT));
    } finally {
      this.writing = false;
      if ([...this.turns].some(this.ready)) this.schedule();
    }
  }

  /** One statement: the texts appended (or replacing), then one NOTIFY of the conversations whose runs advanced. */
  private async write(rows: Written[]) {
    const values = rows.map(() => '(?::uuid, ?::text, ?::boolean, ?::int, ?::text, ?::uuid, ?::int)').join(', ');
    const bindings = rows.flatMap(({ turn, text, replace }) => [turn.runId, text, replace, turn.epoch, turn.queue, turn.jobId, turn.attempt]);
    try {
      this.writes += 1;
      const { rows: advanced } = (await this.deps.db.raw(
        `WITH v (run_id, text, replace, epoch, queue, job_id, attempt) AS (VALUES ${values}),
         u AS (
           UPDATE chat_runs r
              SET snapshot = CASE WHEN v.replace THEN v.text ELSE r.snapshot || v.text END,
                  stream_epoch = CASE WHEN v.replace AND r.snapshot <> '' THEN r.stream_epoch + 1 ELSE r.stream_epoch END,
                  heartbeat_at = now(), updated_at = now()
             FROM v
            WHERE r.id = v.run_id AND r.status = 'running' AND r.credits_charged IS NULL
              AND (v.replace OR r.stream_epoch = v.epoch) AND ${attemptsOwnJobsSql('v')}
           RETURNING r.id, r.conversation_id, r.stream_epoch),
         n AS (SELECT pg_notify(?, json_build_object('keys', json_agg(DISTINCT u.conversation_id), 'text', true)::text) FROM u)
         SELECT u.id::text AS id, u.stream_epoch, (SELECT count(*) FROM n) AS notified FROM u`,
        [...bindings, RUN_EVENTS_CHANNEL],
      )) as { rows: { id: string; stream_epoch: number }[] };
      const epochs = new Map(advanced.map((row) => [row.id, row.stream_epoch]));
      for (const { turn, replace, round, upTo } of rows) {
        const epoch = epochs.get(turn.runId);
        // A replacing write not written: the run ended or was stopped, or this attempt lost its job — it streams no more.
        if (epoch === undefined && replace) this.drop(turn);
        // An append not written: someone else replaced the snapshot (a new epoch) — the round's whole text replaces it in turn.
        else if (epoch === undefined) turn.restart = true;
        else if (turn.round === round) {
          turn.sent = upTo;
          if (replace) turn.epoch = epoch;
        }
        this.release(turn);
      }
    } catch (error) {
      // Written with the next tick (what was not written is still unsent).
      this.deps.log.warn({ err: error, runs: rows.length }, 'chat stream: writing the turns’ text failed');
      for (const { turn, replace, round } of rows) if (replace && turn.round === round) turn.restart = true;
    }
  }
}

const coalescers = new WeakMap<Db, StreamCoalescer>();

/** The process's coalescer for this database (one per worker process). */
export function streamCoalescer(deps: Pick<Deps, 'db' | 'log' | 'config'>): StreamCoalescer {
  let coalescer = coalescers.get(deps.db);
  if (!coalescer) {
    coalescer = new StreamCoalescer(deps, deps.config.CHAT_STREAM_TICK_MS, deps.config.CHAT_STREAM_BUFFER_CHARS);
    coalescers.set(deps.db, coalescer);
  }
  return coalescer;
}
