/**
 * Events — the public module. Events are written by `recordEvent` (src/core/events.ts) in the
 * transaction of the change they describe; this domain lists and streams them back, documents
 * each type (the OpenAPI `webhooks` section) and deletes them after their retention.
 */
export { eventEnvelope, registerEventWebhooks } from './catalog.ts';
export { deleteOldEventsJob } from './jobs.ts';
export { eventRoutes } from './routes.ts';
export { openEventStreams, STREAMS_PER_CALLER } from './stream.ts';
export { visibleEventSql } from './visibility.ts';
