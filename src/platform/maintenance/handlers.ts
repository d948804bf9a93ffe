// Worker side of the maintenance jobs. Both are idempotent by nature: a repeated sweep finds nothing more to delete.
import type { JobContext } from '../../jobs/define.ts';
import { deleteExpiredIdempotencyKeys, sweepRateLimitWindows } from './sweeps.ts';

export async function sweepRateLimits(_payload: unknown, { deps, log }: JobContext): Promise<void> {
  const swept = await sweepRateLimitWindows(deps.db);
  log.debug({ swept }, 'rate-limit windows swept');
}

export async function deleteIdempotencyKeys(_payload: unknown, { deps, log }: JobContext): Promise<void> {
  const deleted = await deleteExpiredIdempotencyKeys(deps.db);
  if (deleted) log.info({ deleted }, 'expired idempotency keys deleted');
}
