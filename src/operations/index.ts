// The operations domain's public module for other domains (metrics): the queue alerts. Its routes and
// jobs are wired by the composition roots (src/routes.ts, src/jobs.ts).
export { currentAlerts } from './queues.ts';
