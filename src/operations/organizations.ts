import type { z } from '../core/zod.ts';
import { BOSS_SCHEMA } from '../jobs/boss.ts';
import type { Deps } from '../platform/deps.ts';
import type { ConsoleCaller } from './access.ts';
import { withinTimeout } from './job-rows.ts';
import type { organizationLoadSchema } from './schema.ts';

/**
 * Each organization's running and waiting jobs against its per-queue concurrency limit, noisiest
 * first — the tenant panel. Reads only jobs that are waiting or running (pg-boss's group index and
 * the fetch index), plus the last hour's failed attempts from the snapshot table.
 */
export async function organizationLoad(deps: Deps, caller: ConsoleCaller, limit: number): Promise<{ items: z.input<typeof organizationLoadSchema>[] }> {
  return withinTimeout(deps.db, deps.config.OPS_STATEMENT_TIMEOUT_MS, async (trx) => {
    const only = caller.organizationId ? 'AND j.group_id = ?' : '';
    const { rows } = await trx.raw(
      `WITH load AS (
         SELECT group_id, name, count(*) FILTER (WHERE state = 'active')::int AS active, count(*) FILTER (WHERE state < 'active')::int AS queued
           FROM ??.job j
          WHERE state <= 'active' AND group_id IS NOT NULL ${only}
          GROUP BY group_id, name
       ), totals AS (
         SELECT group_id, sum(active)::int AS active, sum(queued)::int AS queued,
                jsonb_agg(jsonb_build_object('queue', name, 'active', active, 'queued', queued) ORDER BY active DESC, queued DESC) AS queues
           FROM load GROUP BY group_id
          ORDER BY sum(active) DESC, sum(queued) DESC
          LIMIT ?
       )
       SELECT t.*, o.name,
              (SELECT coalesce(sum(failed), 0)::int FROM queue_throughput q
                WHERE q.organization_id = t.group_id AND q.minute >= now() - interval '1 hour') AS failed_last_hour
         FROM totals t LEFT JOIN organizations o ON o.id = t.group_id
        ORDER BY t.active DESC, t.queued DESC, t.group_id`,
      [BOSS_SCHEMA, ...(caller.organizationId ? [caller.organizationId] : []), limit],
    );
    return {
      items: (
        rows as {
          group_id: string;
          name: string | null;
          active: number;
          queued: number;
          failed_last_hour: number;
          queues: { queue: string; active: number; queued: number }[];
        }[]
      ).map((row) => ({
        organization_id: row.group_id,
        name: row.name,
        active: row.active,
        queued: row.queued,
        failed_last_hour: row.failed_last_hour,
        concurrency_limit: deps.config.JOB_ORGANIZATION_CONCURRENCY,
        queues: row.queues,
      })),
    };
  });
}
