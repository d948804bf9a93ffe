import type { z } from '../core/zod.ts';
import { organizationLoad as loadByOrganization } from '../jobs/boss-sql/index.ts';
import { organizationNames } from '../organizations/index.ts';
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
    const rows = await loadByOrganization(trx, caller.organizationId, limit);
    // Null for an organization that no longer exists (its jobs may outlive it).
    const names = await organizationNames(trx, [...new Set(rows.map((row) => row.group_id))]);
    return {
      items: rows.map((row) => ({
        organization_id: row.group_id,
        name: names.get(row.group_id) ?? null,
        active: row.active,
        queued: row.queued,
        failed_last_hour: row.failed_last_hour,
        concurrency_limit: deps.config.JOB_ORGANIZATION_CONCURRENCY,
        queues: row.queues,
      })),
    };
  });
}
