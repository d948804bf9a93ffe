import { setTimeout as sleep } from 'node:timers/promises';
import type { Deps } from '../platform/deps.ts';

/** What an operation gets to do its work; it returns the credits it used. */
export interface MeteredContext {
  deps: Deps;
  signal: AbortSignal;
}

export type MeteredOperation = (input: unknown, context: MeteredContext) => Promise<number>;

/**
 * The work billed through `meteredOperationJob` (social reads, generations…), by name. Built once
 * per process by its composition root (`src/metered-operations.ts`) and handed over in `Deps`.
 */
export type MeteredOperations = ReadonlyMap<string, MeteredOperation>;

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
