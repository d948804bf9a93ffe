import type { Knex } from 'knex';

/** Rate-limit windows are one minute long (src/http/middleware/rate-limit.ts); none is read once two have passed. */
const RATE_LIMIT_WINDOW_SECONDS = 60;

/** Deletes windows that ended more than a minute ago (nothing reads them again); returns how many. */
export async function sweepRateLimitWindows(db: Knex, olderThanSeconds = 2 * RATE_LIMIT_WINDOW_SECONDS): Promise<number> {
  return db('rate_limit_windows')
    .where('window_start', '<', db.raw(`now() - make_interval(secs => ?)`, [olderThanSeconds]))
    .delete();
}

/** How long a stored Idempotency-Key replays its response; older keys are deleted. */
export const IDEMPOTENCY_KEY_TTL_SECONDS = 24 * 3600;

/** Deletes stored keys older than `olderThanSeconds`, in small batches so no long lock blocks requests. Returns how many. */
export async function deleteExpiredIdempotencyKeys(db: Knex, olderThanSeconds = IDEMPOTENCY_KEY_TTL_SECONDS, batch = 1000): Promise<number> {
  let deleted = 0;
  for (;;) {
    // By ctid: independent of how the table is keyed.
    const { rowCount } = await db.raw(
      `DELETE FROM idempotency_keys WHERE ctid = ANY (ARRAY(
         SELECT ctid FROM idempotency_keys WHERE created_at < now() - make_interval(secs => ?) LIMIT ?))`,
      [olderThanSeconds, batch],
    );
    deleted += rowCount ?? 0;
    if ((rowCount ?? 0) < batch) return deleted;
  }
}
