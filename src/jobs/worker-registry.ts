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
  let failed = 0;
  const history: AttemptRecord[] = [];
  for (const worker of rows as { id: string; in_flight: HeldJob[]; last_heartbeat_at: Date }[]) {
    log.warn({ worker_id: worker.id, jobs: worker.in_flight.length }, 'worker lost: failing the attempts it held so they are retried');
    for (const held of worker.in_flight) {
      const result = await boss.fail(held.queue, { id: held.job_id, retryCount: held.attempt }, { message: `worker ${worker.id} was lost (no heartbeat)` });
      if (affected(result) === 0) continue;
      failed += 1;
      history.push({
        job_id: held.job_id,
        queue: held.queue,
        organization_id: held.organization_id,
        attempt: held.attempt,
        worker_id: worker.id,
        started_at: new Date(held.started_at),
        ended_at: new Date(worker.last_heartbeat_at),
        outcome: 'lost',
        error: { message: 'the worker stopped heartbeating' },
      });
    }
  }
  await insertAttempts(db, history);
  return failed;
}
