import type { Context, Next } from 'koa';
import type { Db } from '../../db/knex.ts';
import { AppError } from '../errors.ts';
import type { Caller } from '../route.ts';

const WINDOW_SECONDS = 60;

/**
 * Per-caller fixed one-minute windows counted in Postgres, so every web process draws on the
 * same quota. One upsert per request on an UNLOGGED table (no WAL); old windows are swept by the
 * maintenance job.
 */
export function rateLimit(db: Db, perMinute: number) {
  return async (ctx: Context, next: Next) => {
    const caller = ctx.state.caller as Caller;
    const { rows } = await db.raw<{ rows: { hits: number; reset: number }[] }>(
      `INSERT INTO rate_limit_windows AS w (caller, window_start, hits)
       VALUES (?, to_timestamp(floor(extract(epoch FROM now()) / ${WINDOW_SECONDS}) * ${WINDOW_SECONDS}), 1)
       ON CONFLICT (caller, window_start) DO UPDATE SET hits = w.hits + 1
       RETURNING hits, ceil(extract(epoch FROM (w.window_start + interval '${WINDOW_SECONDS} seconds' - now())))::int AS reset`,
      [caller.userId],
    );
    const { hits, reset } = rows[0]!;
    const resetSeconds = Math.max(1, reset);
    const headers = {
      'RateLimit-Limit': String(perMinute),
      'RateLimit-Remaining': String(Math.max(0, perMinute - hits)),
      'RateLimit-Reset': String(resetSeconds),
    };
    if (hits > perMinute) {
      throw new AppError(429, 'rate_limited', `rate limit of ${perMinute} requests per minute used up; retry in ${resetSeconds} s`, [], {
        ...headers,
        'Retry-After': String(resetSeconds),
      });
    }
    ctx.set(headers);
    await next();
  };
}

/** Deletes windows that ended more than a minute ago (nothing reads them again); returns how many. */
export async function sweepRateLimitWindows(db: Db, olderThanSeconds = 2 * WINDOW_SECONDS): Promise<number> {
  return db('rate_limit_windows')
    .where('window_start', '<', db.raw(`now() - make_interval(secs => ?)`, [olderThanSeconds]))
    .delete();
}
