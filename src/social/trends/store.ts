// The SQL of cached public trends: one row per (operation, region), replaced on each refresh.
import type { Knex } from 'knex';
import { notify } from '../../db/notifications.ts';
import { inTransaction } from '../../db/transaction.ts';

export const TRENDS_CHANNEL = 'social_trends';

export interface TrendsRow {
  operation: string;
  region: string;
  result: Record<string, unknown>;
  fetched_at: Date;
  stale: boolean;
}

export const trendsKey = (operation: string, region: string) => `${operation}:${region}`;

/** The cached trends and whether they are older than `ttlSeconds`. */
export async function readTrends(db: Knex, operation: string, region: string, ttlSeconds: number): Promise<TrendsRow | undefined> {
  return (await db('social_trends')
    .where({ operation, region })
    .whereNotNull('result')
    .first('operation', 'region', 'result', 'fetched_at', db.raw('fetched_at < now() - make_interval(secs => ?) AS stale', [ttlSeconds]))) as
    | TrendsRow
    | undefined;
}

/** A failed refresh (it never lands) stops blocking new ones after this long. */
const REFRESH_RETRY_SECONDS = 30;

/**
 * Claims the next refresh of an operation and region: true for exactly one of any number of
 * concurrent callers, only while the cache is missing or stale, and again only once that refresh
 * landed (or REFRESH_RETRY_SECONDS later, if it failed).
 */
export async function claimRefresh(trx: Knex.Transaction, operation: string, region: string, ttlSeconds: number): Promise<boolean> {
  const { rows } = await trx.raw(
    `INSERT INTO social_trends (operation, region, refresh_requested_at) VALUES (?, ?, now())
     ON CONFLICT (operation, region) DO UPDATE SET refresh_requested_at = now()
      WHERE (social_trends.fetched_at IS NULL OR social_trends.fetched_at < now() - make_interval(secs => ?))
        AND (social_trends.refresh_requested_at IS NULL
             OR social_trends.refresh_requested_at < social_trends.fetched_at
             OR social_trends.refresh_requested_at < now() - make_interval(secs => ?))
     RETURNING 1`,
    [operation, region, ttlSeconds, REFRESH_RETRY_SECONDS],
  );
  return rows.length === 1;
}

/** Stores a fresh result and tells the waiting web requests (at commit). */
export async function saveTrends(db: Knex, operation: string, region: string, result: unknown): Promise<void> {
  await inTransaction(db, async (trx) => {
    // clock_timestamp(), not now(): later than the request that asked for this refresh, even within one transaction's clock.
    await trx.raw(
      `INSERT INTO social_trends (operation, region, result, fetched_at) VALUES (?, ?, ?::jsonb, clock_timestamp())
       ON CONFLICT (operation, region) DO UPDATE SET result = excluded.result, fetched_at = excluded.fetched_at`,
      [operation, region, JSON.stringify(result)],
    );
    await notify(trx, TRENDS_CHANNEL, trendsKey(operation, region));
  });
}
