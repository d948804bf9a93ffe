import type { Knex } from 'knex';
import type { z } from '../core/zod.ts';
import { organizationLoad as loadByOrganization } from '../jobs/boss-sql/index.ts';
import { organizationLimit } from '../jobs/fairness.ts';
import { organizationNames } from '../organizations/index.ts';
import type { Deps } from '../platform/deps.ts';
import type { ConsoleCaller } from './access.ts';
import { withinTimeout } from './job-rows.ts';
import type { organizationLoadList } from './schema.ts';

type LoadList = z.input<typeof organizationLoadList>;

/**
 * Each organization's running and waiting jobs against what it may run at once, noisiest first — the
 * tenant (fairness) panel. Reads only jobs that are waiting or running (the console's open-jobs
 * index), the live workers (their slots and the per-organization share each enforces) and the last
 * hour's failed attempts from the snapshot table. A queue is `capped` for an organization when it
 * runs all it may there while more of its jobs wait: the limit holding it back, visibly.
 */
export async function organizationLoad(deps: Pick<Deps, 'config' | 'db'>, caller: ConsoleCaller, limit: number): Promise<LoadList> {
  const rule = organizationLimit(deps.config);
  return withinTimeout(deps.db, deps.config.OPS_STATEMENT_TIMEOUT_MS, async (trx) => {
    const rows = await loadByOrganization(trx, caller.organizationId, limit);
    const fleet = await fleetSlots(trx, deps.config.WORKER_LOST_AFTER_SECONDS, null);
    // Null for an organization that no longer exists (its jobs may outlive it).
    const names = await organizationNames(trx, [...new Set(rows.map((row) => row.group_id))]);
    // Weighted: no limit but the fleet's slots, shared by weight among the organizations with work.
    const limitOn = (_queue: string): number | null => (rule.mode === 'fixed' ? rule.limit : null);
    return {
      fairness: {
        mode: rule.mode,
        share: null,
        per_worker: null,
        fixed_limit: rule.mode === 'fixed' ? rule.limit : null,
      },
      items: rows.map((row) => {
        const queues = row.queues.map((queue) => {
          const limitHere = limitOn(queue.queue);
          return {
            ...queue,
            limit: limitHere,
            fleet_slots: fleet.get(queue.queue)?.slots ?? 0,
            capped: limitHere !== null && queue.active >= limitHere && queue.queued > 0,
          };
        });
        return {
          organization_id: row.group_id,
          name: names.get(row.group_id) ?? null,
          active: row.active,
          queued: row.queued,
          failed_last_hour: row.failed_last_hour,
          concurrency_limit: queues[0]?.limit ?? null,
          capped: queues.some((queue) => queue.capped),
          queues,
        };
      }),
    };
  });
}

/**
 * Per queue, over the live workers serving it: their slots, and how many of them one organization may
 * hold (the sum of each worker's per-organization share; a worker from before the share was recorded
 * counts with this process's `fallback`).
 */
async function fleetSlots(trx: Knex.Transaction, lostAfterSeconds: number, fallback: number | null) {
  const { rows } = await trx.raw(
    `SELECT queue, sum(concurrency)::int AS slots, sum(coalesce(organization_concurrency, ?::int))::int AS organization
       FROM job_workers, unnest(queues) AS queue
      WHERE stopped_at IS NULL AND lost_at IS NULL AND last_heartbeat_at >= now() - make_interval(secs => ?)
      GROUP BY queue`,
    [fallback, lostAfterSeconds],
  );
  return new Map((rows as { queue: string; slots: number; organization: number | null }[]).map((row) => [row.queue, row]));
}
