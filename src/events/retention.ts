import type { Knex } from 'knex';
import { EVENT_RETENTION_DAYS } from './schema.ts';

/**
 * Deletes events older than the retention window, in small batches so no long lock blocks the
 * writers, and stream leases that lapsed (their process died). Returns how many events went.
 */
export async function deleteOldEvents(db: Knex, olderThanDays = EVENT_RETENTION_DAYS, batch = 5000): Promise<number> {
  let deleted = 0;
  for (;;) {
    const { rowCount } = await db.raw(
      `DELETE FROM events WHERE id IN (SELECT id FROM events WHERE created_at < now() - make_interval(days => ?) ORDER BY created_at LIMIT ?)`,
      [olderThanDays, batch],
    );
    deleted += rowCount ?? 0;
    if ((rowCount ?? 0) < batch) break;
  }
  await db('event_stream_leases').where('expires_at', '<', db.raw(`now() - interval '1 hour'`)).delete();
  return deleted;
}
