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

/** A refresh that never landed nor failed (its worker died) stops blocking new ones after this long. */
const REFRESH_RETRY_SECONDS = 30;

/**
 * Claims the next refresh of an operation and region: true for exactly one of any number of
 * concurrent callers, only while the cache is missing or stale and no failure is remembered (one in
 * the last `failureTtlSeconds`), and again only once that refresh landed or failed (or
 * REFRESH_RETRY_SECONDS later, if it did neither).
 */
export async function claimRefresh(trx: Knex.Transaction, operation: string, region: string, ttlSeconds: number, failureTtlSeconds: number): Promise<boolean> {
  const { rows } = await trx.raw(
    `INSERT INTO social_trends (operation, region, refresh_requested_at) VALUES (?, ?, now())
     ON CONFLICT (operation, region) DO UPDATE SET refresh_requested_at = now()
      WHERE (social_trends.fetched_at IS NULL OR social_trends.fetched_at < now() - make_interval(secs => ?))
        AND (social_trends.failed_at IS NULL OR social_trends.failed_at < now() - make_interval(secs => ?))
        AND (social_trends.refresh_requested_at IS NULL
             OR social_trends.refresh_requested_at < social_trends.fetched_at
             OR social_trends.refresh_requested_at < social_trends.failed_at
             OR social_trends.refresh_requested_at < now() - make_interval(secs => ?))
     RETURNING 1`,
    [operation, region, ttlSeconds, failureTtlSeconds, REFRESH_RETRY_SECONDS],
  );
  return rows.length === 1;
}

export interface RememberedFailure {
  failure: { kind: string; message: string };
  /** Whole seconds until the failure is forgotten and a request may ask the provider again. */
  retry_after_seconds: number;
}

/** The last refresh's failure while it is remembered (younger than `failureTtlSeconds`) and newer than the cached result, if any. */
export async function readFailure(db: Knex, operation: string, region: string, failureTtlSeconds: number): Promise<RememberedFailure | undefined> {
  const row = await db('social_trends')
    .where({ operation, region })
    .whereRaw('failed_at > now() - make_interval(secs => ?)', [failureTtlSeconds])
    .whereRaw('(fetched_at IS NULL OR failed_at > fetched_at)')
    .first('failure', db.raw('ceil(extract(epoch FROM failed_at + make_interval(secs => ?) - now()))::int AS retry_after_seconds', [failureTtlSeconds]));
  return row ? { failure: row.failure, retry_after_seconds: Math.max(1, row.retry_after_seconds) } : undefined;
}

/** Remembers a failed refresh and tells the waiting web requests (at commit). */
export async function saveFailure(db: Knex, operation: string, region: string, failure: { kind: string; message: string }): Promise<void> {
  await inTransaction(db, async (trx) => {
    await trx.raw(
      `INSERT INTO social_trends (operation, region, failed_at, failure) VALUES (?, ?, clock_timestamp(), ?::jsonb)
       ON CONFLICT (operation, region) DO UPDATE SET failed_at = excluded.failed_at, failure = excluded.failure`,
      [operation, region, JSON.stringify(failure)],
    );
    await notify(trx, TRENDS_CHANNEL, trendsKey(operation, region));
  });
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
