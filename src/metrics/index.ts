// Prometheus metrics of the processes: one registry per process, HTTP and job instruments, and
// collect-time readings of the database (pool, queues, credit ledger). See docs/deployment.md "Metrics and log correlation".
export { registerCreditMetrics, LedgerTally } from './credits.ts';
export { httpMetrics, openApiPath, routeTemplate, UNMATCHED_ROUTE, type HttpMetricsOptions } from './http.ts';
export { JobMetrics, type JobOutcome } from './jobs.ts';
export { registerPoolMetrics } from './pool.ts';
export { startWebMetrics, startWorkerMetrics, type WebMetrics, type WorkerMetrics } from './process.ts';
export { registerQueueMetrics } from './queues.ts';
export { createMetricsRegistry, type ProcessKind } from './registry.ts';
export { bearerMatches, startMetricsServer, type MetricsServer, type MetricsServerOptions } from './server.ts';
