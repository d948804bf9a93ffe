import type { Cron } from 'croner';
import { smallestWallClockGap } from './schedule-calendar.ts';
import { offsetTransitions } from './schedule-zone.ts';

/** Runs sampled from the reference, for the wording only ("runs every …"); the exact smallest gap comes from ./schedule-calendar.ts. */
const RUNS_FROM_REFERENCE = 200;
/** Each side of a DST change: wider than any zone's shift (at most 2 h), so every run it moves is seen. */
const DST_WINDOW_MS = 3 * 3_600_000;
/** Bound for the DST windows: a per-minute job has 360 runs in 6 h; a bound keeps hostile crons cheap. */
const MAX_RUNS_PER_WINDOW = 1_000;
const YEAR_MS = 366 * 24 * 3_600_000;

export interface SmallestGap {
  /** Set when the smallest gap is rarer than the sampled runs show (a month end, a leap day): where it first occurs, wall clock. */
  example?: { from: string; to: string };
  /** The smallest gap between consecutive runs, in seconds. */
  seconds: number;
  /** Whether every examined gap from the reference had that length (for "runs every …"). */
  regular: boolean;
  /** Set when the smallest gap only occurs around a DST change: the UTC instant of that change. */
  dstChange?: Date;
}

/** The smallest gap between consecutive runs in seconds, and the later run of its first occurrence. */
function smallestGapOf(runs: Date[]): { seconds: number; run: Date } | undefined {
  let smallest: { seconds: number; run: Date } | undefined;
  for (let i = 1; i < runs.length; i++) {
    const seconds = (runs[i]!.getTime() - runs[i - 1]!.getTime()) / 1000;
    if (smallest === undefined || seconds < smallest.seconds) smallest = { seconds, run: runs[i]! };
  }
  return smallest;
}

/** The runs of `cron` from `start` until the first one past `end` (inclusive), at most `max`. */
function runsThrough(cron: Cron, start: Date, end: Date, max: number): Date[] {
  const runs: Date[] = [];
  let run = cron.nextRun(start);
  while (run && runs.length < max) {
    runs.push(run);
    if (run.getTime() > end.getTime()) break;
    run = cron.nextRun(run);
  }
  return runs;
}

/**
 * The smallest gap between consecutive runs: the exact wall-clock one from the cron's fields
 * (./schedule-calendar.ts: minute, hour and day wraps over a whole calendar cycle), the next
 * RUNS_FROM_REFERENCE runs after `reference` (whether they are regular, for the wording), and the
 * real gaps around each DST change in the year after it, where a fixed-time job moved out of a
 * spring-forward gap can land close to its neighbour (`30 2,3 * * *` in Berlin: 03:00 and 03:30).
 * Undefined when the cron runs fewer than twice. `stopBelowSeconds` skips the DST scan when the
 * wall clock already breaks the limit (the per-minute windows are the costly part).
 */
export function smallestGap(cron: Cron, timeZone: string, reference: Date, stopBelowSeconds: number): SmallestGap | undefined {
  const runs = cron.nextRuns(RUNS_FROM_REFERENCE + 1, reference);
  const sampled = smallestGapOf(runs);
  if (!sampled) return undefined;
  const changes = offsetTransitions(timeZone, reference, new Date(reference.getTime() + YEAR_MS));
  const wall = smallestWallClockGap(cron.getPattern()!, reference.getUTCFullYear());
  // All gaps are equal exactly when the smallest one is the mean one (and no rarer pair comes closer).
  const rarer = wall !== undefined && wall.minutes * 60 < sampled.seconds;
  const regular = !rarer && sampled.seconds === (runs.at(-1)!.getTime() - runs[0]!.getTime()) / 1000 / (runs.length - 1);
  // When the smallest sampled gap first shows up next to a DST change, the change is the reason: say so.
  const nearChange = regular || rarer ? undefined : changes.find((change) => Math.abs(change.getTime() - sampled.run.getTime()) <= DST_WINDOW_MS);
  const result: SmallestGap = rarer
    ? { seconds: wall.minutes * 60, regular: false, example: { from: wall.from, to: wall.to } }
    : { seconds: sampled.seconds, regular, ...(nearChange && { dstChange: nearChange }) };
  if (result.seconds < stopBelowSeconds) return result;
  for (const change of changes) {
    const start = new Date(change.getTime() - DST_WINDOW_MS);
    const end = new Date(change.getTime() + DST_WINDOW_MS);
    const gap = smallestGapOf(runsThrough(cron, start, end, MAX_RUNS_PER_WINDOW));
    if (gap && gap.seconds < result.seconds) {
      delete result.example;
      Object.assign(result, { seconds: gap.seconds, regular: false, dstChange: change });
    }
  }
  return result;
}

const units: [seconds: number, name: string][] = [
  [86_400, 'day'],
  [3_600, 'hour'],
  [60, 'minute'],
  [1, 'second'],
];

/** 300 → "5 minutes", 60 → "1 minute", 5400 → "90 minutes": the largest unit that divides it exactly. */
export function describeSeconds(seconds: number): string {
  const [size, name] = units.find(([size]) => seconds % size === 0) ?? [1, 'second'];
  const count = seconds / size;
  return `${count} ${name}${count === 1 ? '' : 's'}`;
}
