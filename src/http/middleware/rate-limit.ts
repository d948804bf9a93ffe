import ipaddr from 'ipaddr.js';
import type { Context, Next } from 'koa';
import type { Db } from '../../db/knex.ts';
import { AppError, isAppError } from '../../core/errors.ts';
import type { Caller } from '../../core/caller.ts';

const WINDOW_MS = 60_000;
const MAX_LEASE = 50;
const MAX_REMEMBERED = 10_000;

/** Milliseconds since the epoch; injectable so tests can move time instead of waiting for it. */
export type Clock = () => number;

/** Tokens to lease: an eighth of what is left (1–50), so leases shrink to one as the quota runs out. */
export const leaseSize = (remaining: number) => Math.max(1, Math.min(MAX_LEASE, Math.floor(remaining / 8)));

/** This process's share of one key's current window. */
interface Bucket {
  /** Leased by this process and not yet spent. */
  tokens: number;
  /** The window row's count after our last lease: tokens leased by all processes. */
  counted: number;
  /** Clock time at which the window ends. */
  endsAt: number;
  /** A lease came back empty: the window row is at the limit, and no process can get more before it ends. */
  exhausted: boolean;
  /** The lease in flight; requests of the same key wait for it instead of sending their own. */
  leasing?: Promise<number> | undefined;
}

export interface Admission {
  admitted: boolean;
  /** What the key may still send in this window as this process knows it. */
  remaining: number;
  resetSeconds: number;
}

/**
 * Fixed one-minute windows per key (a caller, or a client address) counted in Postgres, so every
 * web process draws on the same quota. A process does not write once per request: it leases a
 * batch of the key's quota in one upsert on the UNLOGGED window row, spends it locally and leases
 * again when it is used up. The row counts leased tokens and a lease only gets what is left below
 * the limit, so all processes together never admit more than `perMinute` per window. The price:
 * tokens a process leased but did not spend are lost when the window ends, so a key hopping
 * between processes may be refused a little early (at most one lease per process, an eighth of
 * what was left). Once a lease comes back empty the window is spent for every process, so later
 * attempts in it are refused locally, without a write. Windows are whole minutes of `now()`
 * (the processes' clocks, kept in step by NTP); old ones are swept by the maintenance job.
 */
export class QuotaLeases {
  private readonly buckets = new Map<string, Bucket>();

  private readonly db: Db;
  private readonly perMinute: number;
  private readonly now: Clock;
  constructor(db: Db, perMinute: number, now: Clock = Date.now) {
    this.db = db;
    this.perMinute = perMinute;
    this.now = now;
  }

  async take(key: string): Promise<Admission> {
    for (;;) {
      const bucket = this.current(key);
      if (bucket.tokens > 0) {
        bucket.tokens--;
        return this.admission(true, bucket);
      }
      if (bucket.exhausted) return this.admission(false, bucket);
      if (bucket.leasing) {
        await bucket.leasing.catch(() => undefined);
        continue;
      }
      const leasing = this.lease(key, bucket).finally(() => {
        bucket.leasing = undefined;
      });
      bucket.leasing = leasing;
      // Granted tokens go to the pool and the loop takes one (a waiter may take them first; then we lease again).
      if ((await leasing) === 0) return this.admission(false, bucket);
    }
  }

  /** One atomic upsert: adds the tokens asked for to the window row and keeps what fell below the limit. */
  private async lease(key: string, bucket: Bucket): Promise<number> {
    const asked = leaseSize(Math.max(0, this.perMinute - bucket.counted));
    const { rows } = await this.db.raw<{ rows: { hits: number }[] }>(
      `INSERT INTO rate_limit_windows AS w (caller, window_start, hits) VALUES (?, ?, ?)
       ON CONFLICT (caller, window_start) DO UPDATE SET hits = w.hits + excluded.hits
       RETURNING hits`,
      [key, new Date(bucket.endsAt - WINDOW_MS), asked],
    );
    const { hits } = rows[0]!;
    const granted = Math.max(0, Math.min(asked, this.perMinute - (hits - asked)));
    bucket.tokens += granted;
    bucket.counted = hits;
    bucket.exhausted = granted === 0;
    return granted;
  }

  /** The key's bucket for the current window; an ended window's unspent tokens are dropped. */
  private current(key: string): Bucket {
    const now = this.now();
    const known = this.buckets.get(key);
    if (known && (known.leasing || known.endsAt > now)) return known;
    if (this.buckets.size >= MAX_REMEMBERED) this.forgetEnded(now);
    const bucket: Bucket = { tokens: 0, counted: 0, endsAt: (Math.floor(now / WINDOW_MS) + 1) * WINDOW_MS, exhausted: false };
    this.buckets.set(key, bucket);
    return bucket;
  }

  /** Drops ended windows; if all are live, the oldest (its unspent tokens are only ever lost, never overspent). */
  private forgetEnded(now: number): void {
    for (const [key, bucket] of this.buckets) if (!bucket.leasing && bucket.endsAt <= now) this.buckets.delete(key);
    if (this.buckets.size >= MAX_REMEMBERED) this.buckets.delete(this.buckets.keys().next().value!);
  }

  /** Remaining: the limit less what all processes had leased at our last lease, plus our unspent tokens. */
  private admission(admitted: boolean, bucket: Bucket): Admission {
    return {
      admitted,
      remaining: admitted ? Math.max(0, this.perMinute - bucket.counted) + bucket.tokens : 0,
      resetSeconds: Math.max(1, Math.ceil((bucket.endsAt - this.now()) / 1000)),
    };
  }
}

export interface RateLimitOptions {
  now?: Clock;
}

/** A quota's name in `RateLimit-Policy` and `RateLimit`: the caller's, or a client address's for requests without a valid token. */
type PolicyName = 'default' | 'address';

/**
 * draft-ietf-httpapi-ratelimit-headers-11 (`RateLimit-Policy`: quota `q` per window `w` seconds;
 * `RateLimit`: `r` left, `t` seconds to the reset), beside the older three that current clients read.
 */
const limitHeaders = (policy: PolicyName, perMinute: number, { remaining, resetSeconds }: Admission) => ({
  'RateLimit-Policy': `"${policy}";q=${perMinute};w=${WINDOW_MS / 1000}`,
  RateLimit: `"${policy}";r=${remaining};t=${resetSeconds}`,
  'RateLimit-Limit': String(perMinute),
  'RateLimit-Remaining': String(remaining),
  'RateLimit-Reset': String(resetSeconds),
});

const refusal = (policy: PolicyName, what: string, perMinute: number, admission: Admission) =>
  new AppError('rate_limited', `rate limit of ${perMinute} ${what} per minute used up; retry in ${admission.resetSeconds} s`, [], {
    headers: { ...limitHeaders(policy, perMinute, admission), 'Retry-After': String(admission.resetSeconds) },
  });

/** Per authenticated caller (after authentication): every operation counts. */
export function rateLimit(db: Db, perMinute: number, options: RateLimitOptions = {}) {
  const quota = new QuotaLeases(db, perMinute, options.now);
  return async (ctx: Context, next: Next) => {
    const caller = ctx.state.caller as Caller;
    const admission = await quota.take(`user:${caller.userId}`);
    if (!admission.admitted) throw refusal('default', 'requests', perMinute, admission);
    ctx.set(limitHeaders('default', perMinute, admission));
    await next();
  };
}

/**
 * Per client address (`ctx.ip`: see ./client-address.ts), for requests without a valid token (placed just before authentication).
 * Only requests that authentication refuses are counted: a token's signature check touches no
 * database, so charging after it costs nothing a refusal would have saved, and callers with valid
 * tokens behind one shared address (an office, a NAT) keep their own per-caller quota. Over the
 * limit, the 401 becomes a 429; once the window is spent, refusals need no database write.
 */
export function rateLimitByAddress(db: Db, perMinute: number, options: RateLimitOptions = {}) {
  const quota = new QuotaLeases(db, perMinute, options.now);
  return async (ctx: Context, next: Next) => {
    try {
      await next();
    } catch (error) {
      if (ctx.state.caller !== undefined || !isAppError(error, 'unauthorized')) throw error;
      const admission = await quota.take(`addr:${addressKey(ctx.ip)}`);
      if (!admission.admitted) throw refusal('address', 'requests without a valid token from one address', perMinute, admission);
      throw error;
    }
  };
}

/**
 * The key of a client address (`ctx.ip`, set from TRUST_PROXY by ./client-address.ts): IPv4 as is
 * (an IPv4-mapped IPv6 peer too), IPv6 per /64, the block one subscriber is usually given.
 */
export function addressKey(ip: string): string {
  if (!ipaddr.isValid(ip)) return ip;
  const address = ipaddr.process(ip);
  if (address.kind() === 'ipv4') return address.toString();
  const prefix = address.toByteArray().slice(0, 8);
  return `${ipaddr.fromByteArray([...prefix, 0, 0, 0, 0, 0, 0, 0, 0]).toString()}/64`;
}
