import { setTimeout as sleep } from 'node:timers/promises';
import type { Deps } from '../platform/deps.ts';

/** What an operation gets to do its work; it returns the credits it used. */
export interface MeteredContext {
  deps: Deps;
  signal: AbortSignal;
}

export type MeteredOperation = (input: unknown, context: MeteredContext) => Promise<number>;

const operations = new Map<string, MeteredOperation>();

/** Domains register the work they bill through `meteredOperationJob` (social reads, generations…). */
export function registerMeteredOperation(name: string, perform: MeteredOperation): void {
  operations.set(name, perform);
}

export function meteredOperation(name: string): MeteredOperation | undefined {
  return operations.get(name);
}

/**
 * The sandbox operation: waits `duration_ms`, then reports `used` credits. It stands in for a
 * provider call in demos, the crash test and the benchmark.
 */
registerMeteredOperation('sandbox.wait', async (input, { signal }) => {
  const { duration_ms = 0, used = 0 } = (input ?? {}) as { duration_ms?: number; used?: number };
  if (duration_ms > 0) await sleep(duration_ms, undefined, { signal });
  return used;
});
