// Worker side of the trends cache (loaded by the `handler` of refreshTrendsJob in ./jobs.ts).
import { ZodError } from 'zod';
import { isReadFailure } from '../../core/read-failure.ts';
import type { JobContext } from '../../jobs/define.ts';
import { socialOperation } from '../catalog/index.ts';
import type { RefreshTrendsPayload } from './jobs.ts';
import { saveFailure, saveTrends } from './store.ts';

export async function refreshTrends({ operation: name, region }: RefreshTrendsPayload, { deps, log, signal }: JobContext): Promise<void> {
  const operation = socialOperation(name)!;
  const input = operation.input.parse({ region });
  const timeout = AbortSignal.any([signal, AbortSignal.timeout(deps.config.READ_TIMEOUT_MS)]);
  let result: unknown;
  try {
    const answer = await operation.perform(input, { deps, signal: timeout, maxPages: operation.maxPages(input) });
    result = operation.output.parse(answer.result);
  } catch (error) {
    // Stopped or canceled: not the provider's failure; the job is retried or handed back.
    if (signal.aborted) throw error;
    // Remembered, not retried: requests answer 502 until the failure is forgotten (SOCIAL_TRENDS_FAILURE_TTL_SECONDS),
    // so the provider (its own retries included) is asked once per region and failure period, whatever the traffic.
    const kind = isReadFailure(error) ? error.kind : error instanceof ZodError ? 'malformed' : 'failed';
    const reason = error instanceof Error ? error.message : String(error);
    log.warn({ operation: name, region, kind, reason }, 'trends refresh failed');
    await saveFailure(deps.db, name, region, { kind, message: `the social provider's answer could not be used (${kind})` });
    return;
  }
  await saveTrends(deps.db, name, region, result);
}
