import { hostname } from 'node:os';
import type { Knex } from 'knex';
import type { PgBoss } from 'pg-boss';
import type { Logger } from '../platform/logger.ts';
import { insertAttempts, type AttemptRecord } from './attempts.ts';
import { affected } from './boss.ts';

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
}

/**
 * The live workers, in `job_workers`: each worker process registers at start, then writes a
 * heartbeat with the jobs it holds every `WORKER_HEARTBEAT_SECONDS`, and marks itself stopped on a
 * clean stop. Every worker also sweeps: a worker whose heartbeat is older than
 * `WORKER_LOST_AFTER_SECONDS` is marked lost — once, by whichever sweep gets there first — and
 * the attempts it held are failed through pg-boss, fenced to that attempt, so pg-boss retries
 * them now instead of after the queue's heartbeat or expiry; the history records them as `lost`.
 */
export class WorkerRegistry {
  private timer: NodeJS.Timeout | null = null;
  private beating: Promise<void> = Promise.resolve();

  constructor(
    private readonly db: Knex,
    private readonly boss: PgBoss,
    private readonly log: Logger,
    private readonly identity: WorkerIdentity,
    private readonly held: () => HeldJob[],
    private readonly timing: { heartbeatMs: number; lostAfterSeconds: number },
  ) {}

  async start(): Promise<void> {
    await this.db('job_workers').insert({
      id: this.identity.id,
      host: hostname(),
      pid: process.pid,
      version: this.identity.version,
      queues: this.identity.queues,
      concurrency: this.identity.concurrency,
    });
    this.timer = setInterval(() => {
      this.beating = this.beating.then(() => this.beat());
    }, this.timing.heartbeatMs);
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.beating;
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
    } catch (error) {
      this.log.debug({ err: error }, 'workers: heartbeat failed');
    }
  }
}

/** Marks workers lost and fails the attempts they held (fenced). Returns how many attempts were failed. */
export async function sweepLostWorkers(db: Knex, boss: PgBoss, log: Logger, lostAfterSeconds: number): Promise<number> {
  const { rows } = await db.raw(
    `UPDATE job_workers SET lost_at = now()
      WHERE stopped_at IS NULL AND lost_at IS NULL AND last_heartbeat_at < now() - make_interval(secs => ?)
      RETURNING id, in_flight, last_heartbeat_at`,
    [lostAfterSeconds],
  );
  const lost = rows as { id: string; in_flight: HeldJob[]; last_heartbeat_at: Date }[];
  let failed = 0;
  for (const worker of lost) {
    log.warn({ worker_id: worker.id, jobs: worker.in_flight.length }, 'worker lost: failing the attempts it held so they are retried');
    for (const held of worker.in_flight) {
      const result = await boss.fail(held.queue, { id: held.job_id, retryCount: held.attempt }, { message: `worker ${worker.id} was lost (no heartbeat)` });
      failed += affected(result);
    }
  }
  await closeLostAttempts(db, lost);
  return failed;
}

const LOST = { message: 'the worker stopped heartbeating' };

/**
 * The history of lost workers: every attempt they began and never ended is `lost` — the ones
 * they wrote when they began, and the ones only their last heartbeat reported (begun within a
 * flush of their death) — whether pg-boss or this sweep failed the job.
 */
async function closeLostAttempts(db: Knex, workers: readonly { id: string; in_flight: HeldJob[]; last_heartbeat_at: Date }[]): Promise<void> {
  if (workers.length === 0) return;
  const { rows } = await db.raw(
    `UPDATE job_attempts a SET ended_at = GREATEST(w.last_heartbeat_at, a.started_at), outcome = 'lost', error = ?::jsonb
       FROM job_workers w
      WHERE w.id = a.worker_id AND a.worker_id = ANY(?::uuid[]) AND a.ended_at IS NULL
      RETURNING a.job_id, a.attempt`,
    [JSON.stringify(LOST), workers.map((worker) => worker.id)],
  );
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
        error: LOST,
      })),
  );
  await insertAttempts(db, unwritten);
}
