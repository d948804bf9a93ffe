/**
 * Webhooks — the public module (import from here only): an organization's webhook endpoints and
 * the signed delivery of its events to them. The event log calls `fanOutEvent` in the transaction
 * that records an event; the operator console reads `webhookHealth`.
 */
export { fanOutEvent, type WebhookEvent } from './fan-out.ts';
export { webhookHealth, webhookHealthSchema, type WebhookHealth } from './health.ts';
