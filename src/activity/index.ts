/**
 * Activity — the public module (import from here only): `recordActivity` writes an entry of the
 * organization's activity feed in the caller's transaction, with the work it records.
 */
export { type ActivityEntry, recordActivity } from './record.ts';
