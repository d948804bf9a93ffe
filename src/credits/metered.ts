import { setTimeout as sleep } from 'node:timers/promises';
import type { MeteredContext, MeteredOperation, MeteredOperations } from '../platform/deps.ts';

export type { MeteredContext, MeteredOperation, MeteredOperations };

export function meteredOperations(entries: Record<string, MeteredOperation>): MeteredOperations {
  return new Map(Object.entries(entries));
}

/**
 * The sandbox operation: waits `duration_ms`, then reports `used` credits. It stands in for a
 * provider call in demos, the crash test and the benchmark.
 */
export const sandboxWait: MeteredOperation = async (input, { signal }) => {
  const { duration_ms = 0, used = 0 } = (input ?? {}) as { duration_ms?: number; used?: number };
  if (duration_ms > 0) await sleep(duration_ms, undefined, { signal });
  return used;
};
