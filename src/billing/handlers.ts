// Worker side of the billing jobs (loaded by the `handler` of each job in ./jobs.ts).
import type { JobContext } from '../jobs/define.ts';
import { runCycleRefills } from './cycle.ts';
import type { OrganizationScope } from './jobs.ts';

/** Grants each organization its plan credits once per period (the refill row's key guards retries). */
export async function cycleRefills({ organization_id }: OrganizationScope, { deps, log }: JobContext): Promise<void> {
  const { periods } = await runCycleRefills(deps, { organizationId: organization_id });
  log.info({ periods }, 'plan-cycle refills');
}
