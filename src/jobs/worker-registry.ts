import { hostname } from 'node:os';
import type { Knex } from 'knex';
import type { PgBoss } from 'pg-boss';
import type { Logger } from '../platform/logger.ts';
import { insertAttempts, type AttemptRecord } from './attempts.ts';
import { jobError, type JobErrorRecord } from './error-record.ts';
import { affected } from './boss.ts';
import { runningClaims, type SilentAttempt, silentAttempts, unrecordedAttempts } from './boss-sql/index.ts';

/** A job a worker holds right now, as its heartbeat reports it. */
export interface HeldJob {
  job_id: string;
  queue: string;
  attempt: number;
  organization_id: string | null;
  started_at: string;
}

export interface WorkerIdentity {
  id: string;
  version: string;
  queues: readonly string[];
  concurrency: number;
  /** Jobs of one organization this worker runs at once per queue (share mode, src/jobs/fairness.ts); null: a fleet-wide fixed limit. */
  organizationConcurrency?: number | null;
}

/**
 * The live workers, in `job_workers`: each worker process registers at start, then writes a
 * heartbeat with the jobs it holds every `WORKER_HEARTBEAT_SECONDS`, and marks itself stopped on a
 * clean stop. Every worker also sweeps: a worker whose heartbeat is older than
 * `WORKER_LOST_AFTER_SECONDS` is marked lost — once, by whichever sweep gets there first — and
 * the attempts it held are failed through pg-boss, fenced to that attempt, so pg-boss retries
 * them now instead of after the queue's heartbeat or expiry; the history records them as `lost`.
 * Work a hard kill interrupted resumes within seconds of the next start: a worker of the same host
 * whose process is gone is lost after two silent heartbeats (swept at start and on every beat), and
 * at start one pg-boss supervision pass fails the stale heartbeats and expired attempts of workers
 * that died with their machine.
 *
 * The recovery bound for a worker killed at any moment — even right after a fetch, before a heartbeat
 * listed the job: its job is retried within max(2 × WORKER_HEARTBEAT_SECONDS, the queue's
 * heartbeatSeconds) after its last sign of life, plus one heartbeat of another worker (10 + 5 s by
 * default). Two checks on every beat give it: the lost-worker sweeps fail what a worker listed *and*
 * the attempts its claims marked (by the fetch itself), and `failSilentAttempts` fails
 * attempts whose pg-boss heartbeat went stale (set at the fetch itself).
 */
export class WorkerRegistry {
  private timer: NodeJS.Timeout | null = null;
  private beating: Promise<void> = Promise.resolve();
  private superviseNow: Promise<void> = Promise.resolve();

  private readonly db: Knex;
  private readonly boss: PgBoss;
  private readonly log: Logger;
  private readonly identity: WorkerIdentity;
  private readonly held: () => HeldJob[];
  private readonly timing: { heartbeatMs: number; lostAfterSeconds: number };
  constructor(db: Knex, boss: PgBoss, log: Logger, identity: WorkerIdentity, held: () => HeldJob[], timing: { heartbeatMs: number; lostAfterSeconds: number }) {
    this.db = db;
    this.boss = boss;
    this.log = log;
    this.identity = identity;
    this.held = held;
    this.timing = timing;
  }

  async start(): Promise<void> {
    await this.db('job_workers').insert({
      id: this.identity.id,
      host: hostname(),
      pid: process.pid,
      version: this.identity.version,
      queues: this.identity.queues,
      concurrency: this.identity.concurrency,
      organization_concurrency: this.identity.organizationConcurrency ?? null,
    });
    // Not fatal: the sweep on every heartbeat tries again.
    await this.sweepDeadWorkersOfThisHost().catch((error: unknown) => this.log.warn({ err: error }, 'workers: start-up sweep failed'));
    // Attempts of workers that died with their machine: pg-boss's first monitor pass would come a whole supervise interval after start.
    this.superviseNow = this.boss
      .supervise(undefined, { reindex: false })
      .catch((error: unknown) => this.log.debug({ err: error }, 'workers: start-up supervision failed'));
    this.timer = setInterval(() => {
      this.beating = this.beating.then(() => this.beat());
    }, this.timing.heartbeatMs);
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await Promise.all([this.beating, this.superviseNow]);
    await this.db('job_workers')
      .where({ id: this.identity.id })
      .update({ stopped_at: this.db.fn.now(), in_flight: '[]' })
      .catch((error: unknown) => this.log.warn({ err: error }, 'workers: could not record the stop'));
  }

  private async beat(): Promise<void> {
    try {
      // A worker marked lost that comes back (a long pause, a partition) is live again; its old attempts stay failed.
      await this.db('job_workers')
        .where({ id: this.identity.id })
        .update({ last_heartbeat_at: this.db.fn.now(), in_flight: JSON.stringify(this.held()), lost_at: null });
      await sweepLostWorkers(this.db, this.boss, this.log, this.timing.lostAfterSeconds);
      await this.sweepDeadWorkersOfThisHost();
      await failSilentAttempts(this.db, this.boss, this.log);
    } catch (error) {
      this.log.debug({ err: error }, 'workers: heartbeat failed');
    }
  }

  private sweepDeadWorkersOfThisHost(): Promise<number> {
    return sweepDeadWorkersOfThisHost(this.db, this.boss, this.log, this.identity.id, (2 * this.timing.heartbeatMs) / 1000);
  }
}

/** Which registered workers a sweep declares lost (SQL on `job_workers`), and why. */
interface LostWorkers {
  where: string;
  bindings: readonly Knex.Value[];
  /** Why, as the failed attempt's message says it. */
  reason: string;
  /** Why, as the attempt history says it. */
  history: string;
  /** Retry now rather than after the queue's retry delay. */
  retryAtOnce?: boolean;
}

/** Marks workers lost and fails the attempts they held (fenced). Returns how many attempts were failed. */
export async function sweepLostWorkers(db: Knex, boss: PgBoss, log: Logger, lostAfterSeconds: number): Promise<number> {
  return failLostWorkers(db, boss, log, {
    where: 'last_heartbeat_at < now() - make_interval(secs => ?)',
    bindings: [lostAfterSeconds],
    reason: 'no heartbeat',
    history: 'the worker stopped heartbeating',
  });
}

/**
 * Workers registered on this host whose process is gone (SIGKILL, a crash, the machine) are lost
 * once silent for `silentSeconds` (two heartbeats), not `WORKER_LOST_AFTER_SECONDS`, so a worker
 * starting after a hard kill has their jobs retried within seconds. Gone: no process has the pid,
 * or the pid is this process's own and was registered before it started (a restarted container
 * hands out the same pids). The silence is required too: containers sharing a host name (host
 * networking) have pid namespaces of their own, where a live worker's pid looks gone.
 */
export async function sweepDeadWorkersOfThisHost(db: Knex, boss: PgBoss, log: Logger, self: string, silentSeconds: number): Promise<number> {
  const host = hostname();
  const silent = 'host = ? AND id <> ? AND last_heartbeat_at < now() - make_interval(secs => ?)';
  const { rows } = await db.raw(`SELECT DISTINCT pid FROM job_workers WHERE stopped_at IS NULL AND lost_at IS NULL AND ${silent}`, [host, self, silentSeconds]);
  const candidates = (rows as { pid: number }[]).map((row) => row.pid);
  if (candidates.length === 0) return 0;
  return failLostWorkers(db, boss, log, {
    where: `${silent} AND (pid = ANY(?::int[]) OR (pid = ? AND started_at < now() - make_interval(secs => ?)))`,
    bindings: [host, self, silentSeconds, candidates.filter(isGone), process.pid, process.uptime()],
    reason: 'its process is gone',
    history: 'the worker process was gone (found by a worker on its host)',
    // A killed process says nothing against its jobs: they resume at once (the retry limit still bounds a job that kills its worker).
    retryAtOnce: true,
  });
}

/** ESRCH: no such process. EPERM means it exists (another user's). */
function isGone(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return false;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ESRCH';
  }
}

async function failLostWorkers(db: Knex, boss: PgBoss, log: Logger, lost: LostWorkers): Promise<number> {
  const { rows } = await db.raw(
    `UPDATE job_workers SET lost_at = now()
      WHERE stopped_at IS NULL AND lost_at IS NULL AND (${lost.where})
      RETURNING id, in_flight, last_heartbeat_at`,
    lost.bindings,
  );
  let failed = 0;
  const workers = rows as LostWorker[];
  const begun = await begunAttempts(db, workers);
  // The history first: the workers are marked lost now, and no later sweep picks them up again.
  await closeLostAttempts(db, workers, jobError('lost', lost.history));
  for (const worker of workers) {
    const attempts = begun.get(worker.id) ?? [];
    const interrupted = await failHeldAttempts(boss, worker, attempts, lost, log);
    // A warning when work was interrupted; a worker whose jobs had all ended (one killed while idle) is housekeeping.
    log[interrupted > 0 ? 'warn' : 'info'](
      { worker_id: worker.id, jobs: attempts.length, failed: interrupted, reason: lost.reason },
      'worker lost: failing the attempts it held so they are retried',
    );
    failed += interrupted;
  }
  return failed;
}

interface LostWorker {
  id: string;
  in_flight: HeldJob[];
  last_heartbeat_at: Date;
}

type BegunAttempt = Pick<HeldJob, 'job_id' | 'queue' | 'attempt'>;

/**
 * Per lost worker, the attempts it began and never ended: those its last heartbeat listed, those its
 * claims marked and still running (the mark is set by the fetch itself, a heartbeat comes only every
 * WORKER_HEARTBEAT_SECONDS), and those written for it and still open — so a worker killed right after
 * a fetch has that job retried too.
 */
async function begunAttempts(db: Knex, workers: readonly LostWorker[]): Promise<Map<string, BegunAttempt[]>> {
  const begun = new Map(workers.map((worker) => [worker.id, [...worker.in_flight] as BegunAttempt[]] as const));
  if (workers.length === 0) return begun;
  const ids = workers.map((worker) => worker.id);
  const { rows } = await db.raw(`SELECT worker_id, job_id, queue, attempt FROM job_attempt_records WHERE worker_id = ANY(?::uuid[]) AND ended_at IS NULL`, [
    ids,
  ]);
  for (const row of [...(rows as (BegunAttempt & { worker_id: string })[]), ...(await runningClaims(db, ids))]) {
    const list = begun.get(row.worker_id)!;
    if (!list.some((held) => held.job_id === row.job_id && held.attempt === row.attempt))
      list.push({ job_id: row.job_id, queue: row.queue, attempt: row.attempt });
  }
  return begun;
}

/** Fails the attempts the worker began and never ended, each fenced to its attempt; returns how many were still running (now failed). */
async function failHeldAttempts(boss: PgBoss, worker: LostWorker, attempts: readonly BegunAttempt[], lost: LostWorkers, log: Logger): Promise<number> {
  let failed = 0;
  for (const held of attempts) {
    try {
      const result = await boss.fail(held.queue, { id: held.job_id, retryCount: held.attempt }, { message: `worker ${worker.id} was lost (${lost.reason})` });
      if (affected(result) === 0) continue;
      // Pulls a retry forward (a job failed for good is left as it is); pg-boss notifies the workers.
      if (lost.retryAtOnce) await boss.update(held.queue, undefined, { id: held.job_id, startAfter: 0 });
      failed += 1;
    } catch (error) {
      // One attempt that cannot be failed now is left to pg-boss's heartbeat; the others still are.
      log.warn({ err: error, job_id: held.job_id, worker_id: worker.id }, 'worker lost: could not fail an attempt it held');
    }
  }
  return failed;
}

/** How far before a lost worker's last heartbeat its ended attempts are looked at for rows it never wrote (it writes them every 100 ms). */
const UNWRITTEN_ENDS_WINDOW_MS = 5 * 60_000;

/**
 * The history of lost workers: every attempt they began and never ended is `lost` — the ones the
 * history shows running from their claim's mark (or from a row written for them), and the ones only
 * their last heartbeat reported — whether pg-boss or this sweep failed the job. Attempts they ended
 * but died before writing (their job completed, failed or cancelled since their last heartbeat)
 * are written from the job: completed or cancelled as pg-boss ended it, else `lost`.
 */
async function closeLostAttempts(db: Knex, workers: readonly LostWorker[], error: JobErrorRecord): Promise<void> {
  if (workers.length === 0) return;
  const ids = workers.map((worker) => worker.id);
  const heartbeats = new Map(workers.map((worker) => [worker.id, new Date(worker.last_heartbeat_at)] as const));
  const endOf = (worker: string, started: Date) => new Date(Math.max(heartbeats.get(worker)!.getTime(), new Date(started).getTime()));
  // Running by their claim's mark: read before the caller fails their jobs (the mark then no longer shows them running).
  const running = await runningClaims(db, ids);
  const { rows } = await db.raw(
    `UPDATE job_attempt_records a SET ended_at = GREATEST(w.last_heartbeat_at, a.started_at), outcome = 'lost', error = ?::jsonb
       FROM job_workers w
      WHERE w.id = a.worker_id AND a.worker_id = ANY(?::uuid[]) AND a.ended_at IS NULL
      RETURNING a.job_id, a.attempt`,
    [JSON.stringify(error), ids],
  );
  await insertAttempts(
    db,
    running.map((attempt) => ({ ...attempt, ended_at: endOf(attempt.worker_id, attempt.started_at), outcome: 'lost' as const, error })),
  );
  for (const attempt of running) rows.push({ job_id: attempt.job_id, attempt: attempt.attempt });
  const closed = new Set((rows as { job_id: string; attempt: number }[]).map((row) => `${row.job_id}:${row.attempt}`));
  const unwritten: AttemptRecord[] = workers.flatMap((worker) =>
    worker.in_flight
      .filter((held) => !closed.has(`${held.job_id}:${held.attempt}`))
      .map((held) => ({
        job_id: held.job_id,
        queue: held.queue,
        organization_id: held.organization_id,
        attempt: held.attempt,
        worker_id: worker.id,
        started_at: new Date(held.started_at),
        ended_at: new Date(worker.last_heartbeat_at),
        outcome: 'lost' as const,
        error,
      })),
  );
  await insertAttempts(db, unwritten);
  const since = new Date(Math.min(...[...heartbeats.values()].map((at) => at.getTime())) - UNWRITTEN_ENDS_WINDOW_MS);
  const ended = await unrecordedAttempts(db, ids, since);
  await insertAttempts(
    db,
    ended.map((attempt) => {
      // What pg-boss recorded of the job says how the attempt ended, when it says: completed, or cancelled meanwhile.
      const ended = attempt.state === 'completed' || attempt.state === 'cancelled';
      return {
        job_id: attempt.job_id,
        queue: attempt.queue,
        organization_id: attempt.organization_id,
        attempt: attempt.attempt,
        worker_id: attempt.worker_id,
        started_at: new Date(attempt.started_at),
        ended_at: attempt.completed_on ? new Date(attempt.completed_on) : endOf(attempt.worker_id, attempt.started_at),
        outcome: ended ? (attempt.state as 'completed' | 'cancelled') : ('lost' as const),
        error: ended ? null : error,
      };
    }),
  );
}

/**
 * Fails, fenced and through pg-boss, the running attempts whose pg-boss heartbeat is older than their
 * queue's `heartbeatSeconds`, and retries them at once (a lost heartbeat says nothing against the
 * job; the retry limit still bounds one that kills its worker). pg-boss's monitor does the same,
 * but only once per WORKER_SUPERVISE_INTERVAL_SECONDS and bundled with its stats aggregate over
 * the whole job table, too costly to run every few seconds; this reads only the few running jobs
 * (the active index), so every worker runs it on every registry heartbeat. Running jobs pay nothing
 * more than their pg-boss heartbeat, one UPDATE every heartbeatSeconds / 2. Returns how many it failed.
 */
export async function failSilentAttempts(db: Knex, boss: PgBoss, log: Logger): Promise<number> {
  const silent = await silentAttempts(db);
  const failed: SilentAttempt[] = [];
  for (const attempt of silent) {
    const message = `no heartbeat for ${attempt.heartbeat_seconds} s: the worker running it is gone or frozen`;
    const result = await boss.fail(attempt.name, { id: attempt.id, retryCount: attempt.retry_count }, { message });
    if (affected(result) === 0) continue;
    await boss.update(attempt.name, undefined, { id: attempt.id, startAfter: 0 });
    failed.push(attempt);
  }
  if (failed.length === 0) return 0;
  log.warn({ jobs: failed.map((attempt) => attempt.id) }, 'attempts whose heartbeat stopped failed so they are retried');
  await recordUnwrittenAttempts(db, failed);
  return failed.length;
}

/**
 * Their history. An attempt a claim marked is written as it stood, running and credited to its
 * worker (the mark alone no longer shows it once its job left `active`): the worker ends it if it
 * comes back (frozen, partitioned: `superseded`), or the sweep that declares it lost closes it
 * `lost`. An attempt fetched with no mark and killed before its worker wrote it (within 100 ms of
 * the fetch) is recorded `lost`, with no worker (none reported holding it).
 */
async function recordUnwrittenAttempts(db: Knex, attempts: readonly SilentAttempt[]): Promise<void> {
  const { rows } = await db.raw(
    `SELECT DISTINCT job_id, attempt FROM job_attempt_records WHERE job_id = ANY(?::uuid[]) AND outcome IS DISTINCT FROM 'deferred'`,
    [attempts.map((attempt) => attempt.id)],
  );
  const written = new Set((rows as { job_id: string; attempt: number }[]).map((row) => `${row.job_id}:${row.attempt}`));
  await insertAttempts(
    db,
    attempts
      .filter((attempt) => !written.has(`${attempt.id}:${attempt.retry_count}`))
      .map((attempt) => ({
        job_id: attempt.id,
        queue: attempt.name,
        organization_id: attempt.group_id,
        attempt: attempt.retry_count,
        worker_id: attempt.claimed_by,
        started_at: new Date(attempt.started_on),
        ...(attempt.claimed_by
          ? { ended_at: null, outcome: null, error: null }
          : {
              ended_at: new Date(Math.max(new Date(attempt.heartbeat_on).getTime(), new Date(attempt.started_on).getTime())),
              outcome: 'lost' as const,
              error: jobError('lost', 'no heartbeat: the worker running it was gone or frozen'),
            }),
      })),
  );
}
