// Worker side of the trends cache (loaded by the `handler` of refreshTrendsJob in ./jobs.ts).
import { isReadFailure } from '../../core/read-failure.ts';
import type { JobContext } from '../../jobs/define.ts';
import { socialOperation } from '../catalog/index.ts';
import type { RefreshTrendsPayload } from './jobs.ts';
import { saveTrends } from './store.ts';

export async function refreshTrends({ operation: name, region }: RefreshTrendsPayload, { deps, log, signal }: JobContext): Promise<void> {
  const operation = socialOperation(name)!;
  const input = operation.input.parse({ region });
  const timeout = AbortSignal.any([signal, AbortSignal.timeout(deps.config.READ_TIMEOUT_MS)]);
  try {
    const answer = await operation.perform(input, { deps, signal: timeout, maxPages: operation.maxPages(input) });
    const result = operation.output.parse(answer.result);
    await saveTrends(deps.db, name, region, result);
  } catch (error) {
    // Waiting requests answer 502/504 at their own deadline; the next request tries again.
    if (isReadFailure(error)) return log.warn({ operation: name, region, kind: error.kind, reason: error.message }, 'trends refresh failed');
    throw error;
  }
}
