import type { z } from '../core/zod.ts';
import type { HeldJob } from '../jobs/worker-registry.ts';
import type { Deps } from '../platform/deps.ts';
import { iso } from './presenter.ts';
import type { workerSchema } from './schema.ts';

interface WorkerRow {
  id: string;
  host: string;
  pid: number;
  version: string;
  queues: string[];
  concurrency: number;
  in_flight: HeldJob[];
  started_at: Date;
  last_heartbeat_at: Date;
  stopped_at: Date | null;
  lost_at: Date | null;
  stale: boolean;
}

/** Live workers (and, on request, those that stopped or were lost in the last day), newest first. */
export async function listWorkers(deps: Pick<Deps, 'config' | 'db'>, includeStopped: boolean): Promise<{ items: z.input<typeof workerSchema>[] }> {
  const { rows } = await deps.db.raw(
    `SELECT *, last_heartbeat_at < now() - make_interval(secs => ?) AS stale FROM job_workers
      WHERE ${includeStopped ? `last_heartbeat_at >= now() - interval '1 day'` : 'stopped_at IS NULL AND lost_at IS NULL'}
      ORDER BY started_at DESC, id`,
    [deps.config.WORKER_LOST_AFTER_SECONDS],
  );
  return {
    items: (rows as WorkerRow[]).map((row) => ({
      id: row.id,
      host: row.host,
      pid: row.pid,
      version: row.version,
      queues: row.queues,
      concurrency: row.concurrency,
      jobs_in_flight: row.in_flight.length,
      in_flight: row.in_flight,
      // A stale heartbeat is lost even before a sweep marked it (no worker may be left to sweep).
      status: row.stopped_at ? 'stopped' : row.lost_at || row.stale ? 'lost' : 'live',
      started_at: iso(row.started_at)!,
      last_heartbeat_at: iso(row.last_heartbeat_at)!,
      stopped_at: iso(row.stopped_at),
      lost_at: iso(row.lost_at),
    })),
  };
}
