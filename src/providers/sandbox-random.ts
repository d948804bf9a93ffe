/**
 * Seeded randomness for the sandbox providers (social data, generations): the same request always
 * gives the same output, so tests and demos can assert on it and a cursor replays the same page.
 */
import { createHash } from 'node:crypto';

export type Random = () => number;

/** JSON with sorted keys, so `{a, b}` and `{b, a}` seed the same output. */
export function stableJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableJson).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, item]) => item !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([key, item]) => `${JSON.stringify(key)}:${stableJson(item)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** A 32-bit seed from any strings. */
export const seedOf = (...parts: (string | number)[]): number => createHash('sha256').update(parts.join('\u0000')).digest().readUInt32BE(0);

/** mulberry32: tiny, fast, the same sequence on every machine; good enough for plausible fake data (never for secrets). */
export function random(seed: number): Random {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
