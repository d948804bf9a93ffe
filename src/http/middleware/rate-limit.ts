import type { Context, Next } from 'koa';
import type { Db } from '../../db/knex.ts';
import { AppError } from '../../core/errors.ts';
import type { Caller } from '../../core/caller.ts';

const WINDOW_SECONDS = 60;
const MAX_LEASE = 50;
const MAX_REMEMBERED = 10_000;

/** Tokens to lease: an eighth of what is left (1–50), so leases shrink to one as the quota runs out. */
export const leaseSize = (remaining: number) => Math.max(1, Math.min(MAX_LEASE, Math.floor(remaining / 8)));

/** This process's share of one caller's current window. */
interface Bucket {
  /** Leased by this process and not yet spent. */
  tokens: number;
  /** The window row's count after our last lease: tokens leased by all processes (plus refused attempts). */
  counted: number;
  /** Date.now() at which the window ends, taken from before the lease was sent (so never late). */
  endsAt: number;
  /** The lease in flight; requests of the same caller wait for it instead of sending their own. */
  leasing?: Promise<number> | undefined;
}

export interface Admission {
  admitted: boolean;
  /** What the caller may still send in this window as this process knows it. */
  remaining: number;
  resetSeconds: number;
}

/**
 * Per-caller fixed one-minute windows counted in Postgres, so every web process draws on the
 * same quota. A process does not write once per request: it leases a batch of the caller's
 * quota in one upsert on the UNLOGGED window row, spends it locally and leases again when it is
 * used up. The row counts leased tokens and a lease only gets what is left below the limit, so
 * all processes together never admit more than `perMinute` per window. The price: tokens a
 * process leased but did not spend are lost when the window ends, so a caller hopping between
 * processes may be refused a little early (at most one lease per process, an eighth of what was
 * left). Refused attempts are counted too (1 each), as before. Old windows are swept by the
 * maintenance job.
 */
export class QuotaLeases {
  private readonly buckets = new Map<string, Bucket>();

  constructor(
    private readonly db: Db,
    private readonly perMinute: number,
  ) {}

  async take(caller: string): Promise<Admission> {
    for (;;) {
      const bucket = this.current(caller);
      if (bucket.tokens > 0) {
        bucket.tokens--;
        return this.admission(true, bucket);
      }
      if (bucket.leasing) {
        await bucket.leasing.catch(() => undefined);
        continue;
      }
      const leasing = this.lease(caller, bucket).finally(() => {
        bucket.leasing = undefined;
      });
      bucket.leasing = leasing;
      // Granted tokens go to the pool and the loop takes one (a waiter may take them first; then we lease again).
      if ((await leasing) === 0) return this.admission(false, bucket);
    }
  }

  /** One atomic upsert: adds the tokens asked for to the window row and keeps what fell below the limit. */
  private async lease(caller: string, bucket: Bucket): Promise<number> {
    const asked = leaseSize(Math.max(0, this.perMinute - bucket.counted));
    const sentAt = Date.now();
    const { rows } = await this.db.raw<{ rows: { hits: number; left: number }[] }>(
      `INSERT INTO rate_limit_windows AS w (caller, window_start, hits)
       VALUES (?, to_timestamp(floor(extract(epoch FROM now()) / ${WINDOW_SECONDS}) * ${WINDOW_SECONDS}), ?)
       ON CONFLICT (caller, window_start) DO UPDATE SET hits = w.hits + excluded.hits
       RETURNING hits, extract(epoch FROM (w.window_start + interval '${WINDOW_SECONDS} seconds' - now()))::float8 AS left`,
      [caller, asked],
    );
    const { hits, left } = rows[0]!;
    const granted = Math.max(0, Math.min(asked, this.perMinute - (hits - asked)));
    bucket.tokens += granted;
    bucket.counted = hits;
    bucket.endsAt = sentAt + left * 1000;
    return granted;
  }

  /** The caller's bucket for the current window; an ended window's unspent tokens are dropped. */
  private current(caller: string): Bucket {
    const now = Date.now();
    const known = this.buckets.get(caller);
    if (known && (known.leasing || known.endsAt > now)) return known;
    if (this.buckets.size >= MAX_REMEMBERED) this.forgetEnded(now);
    const bucket: Bucket = { tokens: 0, counted: 0, endsAt: 0 };
    this.buckets.set(caller, bucket);
    return bucket;
  }

  /** Drops ended windows; if all are live, the oldest (its unspent tokens are only ever lost, never overspent). */
  private forgetEnded(now: number): void {
    for (const [caller, bucket] of this.buckets) if (!bucket.leasing && bucket.endsAt <= now) this.buckets.delete(caller);
    if (this.buckets.size >= MAX_REMEMBERED) this.buckets.delete(this.buckets.keys().next().value!);
  }

  /** Remaining: the limit less what all processes had leased at our last lease, plus our unspent tokens. */
  private admission(admitted: boolean, bucket: Bucket): Admission {
    return {
      admitted,
      remaining: admitted ? Math.max(0, this.perMinute - bucket.counted) + bucket.tokens : 0,
      resetSeconds: Math.max(1, Math.ceil((bucket.endsAt - Date.now()) / 1000)),
    };
  }
}

export function rateLimit(db: Db, perMinute: number) {
  const quota = new QuotaLeases(db, perMinute);
  return async (ctx: Context, next: Next) => {
    const caller = ctx.state.caller as Caller;
    const { admitted, remaining, resetSeconds } = await quota.take(caller.userId);
    const headers = {
      'RateLimit-Limit': String(perMinute),
      'RateLimit-Remaining': String(remaining),
      'RateLimit-Reset': String(resetSeconds),
    };
    if (!admitted) {
      throw new AppError('rate_limited', `rate limit of ${perMinute} requests per minute used up; retry in ${resetSeconds} s`, [], {
        headers: { ...headers, 'Retry-After': String(resetSeconds) },
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
