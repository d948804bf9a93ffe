// The social sandbox's helpers on top of the shared seeded randomness (../../sandbox-random.ts).
import type { Random } from '../../sandbox-random.ts';

export { type Random, random, seedOf, stableJson } from '../../sandbox-random.ts';

export const int = (rng: Random, min: number, max: number): number => min + Math.floor(rng() * (max - min + 1));
export const pick = <T>(rng: Random, items: readonly T[]): T => items[Math.floor(rng() * items.length)]!;
/** Counts spread over orders of magnitude, as follower and view counts are. */
export const skewed = (rng: Random, max: number): number => Math.floor(max ** rng());
export const token = (rng: Random, length = 10): string =>
  Array.from({ length }, () => 'abcdefghijklmnopqrstuvwxyz0123456789'[Math.floor(rng() * 36)]).join('');

/** Fixed epoch (not the clock), so dates are deterministic too. */
const EPOCH = Date.UTC(2026, 0, 15, 12, 0, 0);
export const dateBefore = (hoursAgo: number): string => new Date(EPOCH - Math.round(hoursAgo * 3_600_000)).toISOString();

export const formatCount = (value: number): string => value.toLocaleString('en-US');
