// The operations domain's public module for other domains (metrics): the queue alerts. Its routes and
// jobs are wired by the composition roots (src/app/routes.ts, src/app/jobs.ts).
export { currentAlerts } from './queues.ts';
