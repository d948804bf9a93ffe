import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import type { LimitedProvider, ProviderLimit, ProviderLimits } from '../config/schema.ts';
import { UpstreamBusy } from '../jobs/define.ts';

// Upstream capacity is the real limit of waiting work: each provider may have a concurrency and a
// rate across the fleet (PROVIDER_LIMITS), and learns a pause from its 429s. A call over a limit
// throws UpstreamBusy, which the job runtime turns into a snooze: the work waits queued, neither
// failed nor spinning. Each check is one statement on a pool connection, released at once: a call
// holds a slot row, never a connection, while it waits on its upstream.

/** How long a slot is held at most: past it, a slot of a worker that died is free again by itself. */
export const PROVIDER_SLOT_LEASE_SECONDS = 15 * 60;
/** A call that found the provider full tries again after about this long. */
export const PROVIDER_FULL_SECONDS = 2;
/** A 429 without Retry-After pauses its provider this long. */
const DEFAULT_PAUSE_SECONDS = 10;

const CLAIM = `UPDATE provider_slots s SET holder = :holder, held_until = now() + make_interval(secs => :lease)
   WHERE (s.provider, s.slot) = (
     SELECT provider, slot FROM provider_slots
      WHERE provider = :provider AND slot < :concurrency AND (holder IS NULL OR held_until < now())
        AND NOT EXISTS (SELECT 1 FROM provider_backoffs b WHERE b.provider = :provider AND b.until > now())
      ORDER BY slot LIMIT 1
        FOR UPDATE SKIP LOCKED)
   RETURNING s.slot`;

/** What a call holds while it runs: its slot (null: the provider has no concurrency limit). */
interface Held {
  provider: LimitedProvider;
  slot: number | null;
  holder: string;
}

export class ProviderLimiter {
  private readonly db: Knex;
  private readonly limits: ProviderLimits;
  constructor(db: Knex, limits: ProviderLimits) {
    this.db = db;
    this.limits = limits;
  }

  limitOf(provider: LimitedProvider): ProviderLimit | undefined {
    return this.limits[provider];
  }

  /** Takes a slot and a call of this minute; UpstreamBusy when the provider is full, over its rate or paused. */
  async acquire(provider: LimitedProvider): Promise<Held> {
    const limit = this.limits[provider];
    const holder = randomUUID();
    if (!limit) return { provider, slot: null, holder };
    let slot: number | null = null;
    if (limit.concurrency !== undefined) {
      slot = await this.claim(provider, holder, limit.concurrency);
      if (slot === null) {
        const paused = await this.pausedFor(provider);
        throw new UpstreamBusy(
          paused ?? PROVIDER_FULL_SECONDS,
          paused ? `${provider} asked to wait (429)` : `${provider} is at its limit of ${limit.concurrency} calls at once`,
        );
      }
    } else {
      const paused = await this.pausedFor(provider);
      if (paused) throw new UpstreamBusy(paused, `${provider} asked to wait (429)`);
    }
    if (limit.per_minute !== undefined) {
      // One statement: the minute's count goes up only while under the rate (the conflict's WHERE is rechecked on the latest row).
      const { rows } = await this.db.raw(
        `INSERT INTO provider_minutes (provider, minute, calls) VALUES (?, date_trunc('minute', now()), 1)
         ON CONFLICT (provider, minute) DO UPDATE SET calls = provider_minutes.calls + 1 WHERE provider_minutes.calls < ?
         RETURNING calls`,
        [provider, limit.per_minute],
      );
      if (rows.length === 0) {
        const held = { provider, slot, holder };
        await this.release(held);
        const { rows: left } = await this.db.raw(`SELECT 60 - extract(second FROM now())::float8 AS left`);
        throw new UpstreamBusy(Math.max(1, Math.ceil(left[0].left)), `${provider} is at its limit of ${limit.per_minute} calls a minute`);
      }
    }
    return { provider, slot, holder };
  }

  async release(held: Held): Promise<void> {
    if (held.slot === null) return;
    await this.db('provider_slots').where({ provider: held.provider, slot: held.slot, holder: held.holder }).update({ holder: null, held_until: null });
  }

  /** The provider answered 429: every call to it waits `seconds` (its Retry-After), across the fleet. */
  async pause(provider: LimitedProvider, seconds: number): Promise<void> {
    await this.db.raw(
      `INSERT INTO provider_backoffs (provider, until) VALUES (?, now() + make_interval(secs => ?))
       ON CONFLICT (provider) DO UPDATE SET until = greatest(provider_backoffs.until, EXCLUDED.until)`,
      [provider, seconds],
    );
  }

  /**
   * Runs `call` holding a slot of `provider`; a 429 it ends with pauses the provider (Retry-After,
   * else 10 s) and becomes UpstreamBusy, so the job waits rather than fails.
   */
  async run<T>(provider: LimitedProvider, call: () => Promise<T>): Promise<T> {
    const held = await this.acquire(provider);
    try {
      return await call();
    } catch (error) {
      throw await this.busyOn429(provider, error);
    } finally {
      await this.release(held).catch(() => undefined); // its lease frees it anyway
    }
  }

  /** `stream` holding a slot of `provider` from its first item until it ends (or is left). */
  async *stream<T>(provider: LimitedProvider, stream: () => AsyncIterable<T>): AsyncIterable<T> {
    const held = await this.acquire(provider);
    try {
      yield* stream();
    } catch (error) {
      throw await this.busyOn429(provider, error);
    } finally {
      await this.release(held).catch(() => undefined);
    }
  }

  private async busyOn429(provider: LimitedProvider, error: unknown): Promise<unknown> {
    if (statusOf(error) !== 429) return error;
    const seconds = retryAfterOf(error) ?? DEFAULT_PAUSE_SECONDS;
    await this.pause(provider, seconds).catch(() => undefined);
    return new UpstreamBusy(seconds, `${provider} answered 429: waiting ${seconds} s`);
  }

  private async claim(provider: LimitedProvider, holder: string, concurrency: number): Promise<number | null> {
    const claim = async () => {
      const { rows } = await this.db.raw(CLAIM, { holder, lease: PROVIDER_SLOT_LEASE_SECONDS, provider, concurrency });
      return (rows[0]?.slot as number | undefined) ?? null;
    };
    const slot = await claim();
    if (slot !== null) return slot;
    // The rows are created by the first claim that finds fewer (a new provider limit, or a raised one).
    const { rowCount } = await this.db.raw(`INSERT INTO provider_slots (provider, slot) SELECT ?, generate_series(0, ? - 1) ON CONFLICT DO NOTHING`, [
      provider,
      concurrency,
    ]);
    return rowCount > 0 ? claim() : null;
  }

  private async pausedFor(provider: LimitedProvider): Promise<number | null> {
    const { rows } = await this.db.raw(
      `SELECT ceil(extract(epoch FROM until - now()))::int AS seconds FROM provider_backoffs WHERE provider = ? AND until > now()`,
      [provider],
    );
    return (rows[0]?.seconds as number | undefined) ?? null;
  }
}

const statusOf = (error: unknown): number | null => {
  if (typeof error !== 'object' || error === null) return null;
  const { status, statusCode } = error as { status?: unknown; statusCode?: unknown };
  return typeof status === 'number' ? status : typeof statusCode === 'number' ? statusCode : null;
};

const retryAfterOf = (error: unknown): number | null => {
  const value = (error as { retryAfterSeconds?: unknown }).retryAfterSeconds;
  return typeof value === 'number' && value > 0 ? Math.ceil(value) : null;
};
