/**
 * Activity — the feed's public module. Entries are written by `recordActivity` (src/core/activity.ts)
 * in the transaction of the change they record; this domain reads them back as the feed.
 */
export { activityFeed } from './feed.ts';
