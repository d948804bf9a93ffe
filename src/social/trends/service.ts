/**
 * Public trends, served from the cache (./store.ts) and unbilled: the same data for everyone.
 * Fresh: answered at once. Stale: answered at once with what is cached, and a refresh is enqueued
 * (stale-while-revalidate). Missing: a refresh is enqueued and the request waits for its NOTIFY,
 * at most READ_TIMEOUT_MS (then 504). One refresh per operation and region at a time. A refresh
 * that failed is remembered for SOCIAL_TRENDS_FAILURE_TTL_SECONDS: a request meanwhile that has
 * nothing cached answers 502 at once (with Retry-After) and asks the provider nothing, and a stale
 * answer is served without a new refresh. Nothing here is billed, failures included.
 */
import { AppError } from '../../core/errors.ts';
import { notificationHub } from '../../db/notifications.ts';
import type { Deps } from '../../platform/deps.ts';
import { refreshTrendsJob, type trendOperations } from './jobs.ts';
import { claimRefresh, readFailure, readTrends, type RememberedFailure, TRENDS_CHANNEL, type TrendsRow, trendsKey } from './store.ts';
import { inTransaction } from '../../db/transaction.ts';

type TrendOperation = (typeof trendOperations)[number];

export async function getTrends(deps: Deps, operation: TrendOperation, region: string): Promise<TrendsRow> {
  const ttl = deps.config.SOCIAL_TRENDS_TTL_SECONDS;
  const cached = await readTrends(deps.db, operation, region, ttl);
  if (cached && !cached.stale) return cached;
  if (cached) {
    await requestRefresh(deps, operation, region);
    return cached;
  }
  const failureTtl = deps.config.SOCIAL_TRENDS_FAILURE_TTL_SECONDS;
  const remembered = await readFailure(deps.db, operation, region, failureTtl);
  if (remembered) throw refreshFailed(operation, region, remembered);
  // Nothing cached yet: listen first, then ask, so the refresh cannot finish unheard.
  let wake: () => void = () => {};
  const changed = new Promise<void>((resolve) => (wake = resolve));
  const unsubscribe = await notificationHub(deps.db, deps.log).subscribe(TRENDS_CHANNEL, trendsKey(operation, region), {
    changed: () => wake(),
    close: () => wake(),
  });
  let timer: NodeJS.Timeout | undefined;
  try {
    await requestRefresh(deps, operation, region);
    const timedOut = new Promise<void>((resolve) => (timer = setTimeout(resolve, deps.config.READ_TIMEOUT_MS)));
    await Promise.race([changed, timedOut]);
  } finally {
    clearTimeout(timer);
    unsubscribe();
  }
  const fetched = await readTrends(deps.db, operation, region, ttl);
  if (fetched) return fetched;
  const failed = await readFailure(deps.db, operation, region, failureTtl);
  if (failed) throw refreshFailed(operation, region, failed);
  throw new AppError('upstream_timeout', `${operation}: the trends of ${region} could not be fetched in time; retry shortly`);
}

/** 502, like a failed read: what went wrong (the provider's own words stay in the worker's log), and when to ask again. */
const refreshFailed = (operation: TrendOperation, region: string, { failure, retry_after_seconds }: RememberedFailure) =>
  new AppError('upstream_failed', `${operation}: the trends of ${region} could not be fetched (${failure.kind}); retry in ${retry_after_seconds} s`, [], {
    headers: { 'Retry-After': String(retry_after_seconds) },
  });

/** Enqueues a refresh unless one is already on its way (./store.ts claimRefresh), in one transaction with the claim. */
async function requestRefresh(deps: Pick<Deps, 'config' | 'db' | 'jobs'>, operation: TrendOperation, region: string): Promise<void> {
  await inTransaction(deps.db, async (trx) => {
    if (await claimRefresh(trx, operation, region, deps.config.SOCIAL_TRENDS_TTL_SECONDS, deps.config.SOCIAL_TRENDS_FAILURE_TTL_SECONDS))
      await deps.jobs.enqueue(trx, refreshTrendsJob, { operation, region }, { organizationId: null });
  });
}
