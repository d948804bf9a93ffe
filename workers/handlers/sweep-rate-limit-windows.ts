import { sweepRateLimitWindows } from '../../src/http/middleware/rate-limit.ts';
import { sweepRateLimitWindowsJob } from '../../src/platform/maintenance/jobs.ts';
import { handle } from '../handler.ts';

/** Idempotent by nature: a repeated sweep finds nothing more to delete. */
export const sweepRateLimitWindowsHandler = handle(sweepRateLimitWindowsJob, async (_payload, { deps, log }) => {
  const swept = await sweepRateLimitWindows(deps.db);
  log.debug({ swept }, 'rate-limit windows swept');
});
