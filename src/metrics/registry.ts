import { collectDefaultMetrics, Registry } from 'prom-client';

/** Which kind of process a registry describes: every series it exposes carries it as the `process` label. */
export type ProcessKind = 'web' | 'worker';

/**
 * A registry of its own per process, never prom-client's global default: tests start several apps
 * (and a worker) in one node process, and metrics registered twice in one registry throw. The
 * default process metrics (CPU, memory, event-loop lag, GC) come with it; `defaultMetrics: false`
 * leaves them out (each call installs its own event-loop and GC observers).
 */
export function createMetricsRegistry(kind: ProcessKind, options: { defaultMetrics?: boolean } = {}): Registry {
  const registry = new Registry();
  registry.setDefaultLabels({ process: kind });
  if (options.defaultMetrics !== false) {
    collectDefaultMetrics({ register: registry });
    // Gauges named like counters, which `promtool check metrics` refuses ("non-counter metrics should
    // not have _total suffix"); the same counts stay exposed by type (`nodejs_active_handles{type}`…).
    for (const name of ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total']) registry.removeSingleMetric(name);
  }
  return registry;
}
