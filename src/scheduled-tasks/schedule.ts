import { Cron } from 'croner';
import { badRequest } from '../core/errors.ts';
import { describeSeconds, smallestGap } from './schedule-interval.ts';
import { isoWithOffset, resolvedTimeZone } from './schedule-zone.ts';

/**
 * The schedule math of scheduled tasks: when a cron in a time zone runs. Pure functions over
 * croner; nothing here reads the clock (callers pass `after`, `from`, `to`).
 *
 * DST, as croner 11 does it with `fixedTimeRule: 'no-wildcard'` (pinned by the tests):
 * - Fixed-time jobs (no `*` and no step in minute or hour: `30 2 * * *`, `0 9,17 * * *`, `0 1-3 * * *`)
 *   follow the wall clock. A time skipped by spring-forward runs once, at the first valid instant
 *   after the gap (02:30 on 2026-03-29 in Europe/Berlin runs at 03:00 CEST); a time repeated by
 *   fall-back runs once, on its first occurrence (02:30 CEST on 2026-10-25, not again at 02:30 CET),
 *   even when asked for the next run from between the two occurrences. `0 9 * * *` in
 *   America/New_York stays at 09:00 local, so its UTC hour moves 14 → 13 in March and back in November.
 * - Interval jobs (`*` or a step in minute or hour: `0 * * * *`, `*\/30 * * * *`) follow elapsed time:
 *   times inside a spring-forward gap do not exist and are skipped, and a repeated hour runs in both
 *   occurrences, so an hourly job still runs every 60 real minutes through the night of fall-back.
 * croner's default rule ('single-value') would treat lists and ranges (`30 2,14 * * *`) as interval
 * jobs: skipped entirely on spring-forward day and run twice on fall-back day, hence 'no-wildcard'
 * (which is also how Vixie cron tells wildcard jobs apart). croner never returns a run twice, so no
 * dedupe is needed on top of it.
 */
export interface Schedule {
  /** Five fields: minute hour day-of-month month day-of-week (or a croner nickname such as `@daily`). */
  cron: string;
  /** IANA time-zone name, e.g. "Europe/Berlin". */
  timezone: string;
}

const CRON_MAX_LENGTH = 200;
const FIELDS = 'minute hour day-of-month month day-of-week';
/** Validation is deterministic: the same schedule gets the same verdict whenever it is checked. */
const VALIDATION_REFERENCE = new Date('2026-01-01T00:00:00Z');
/** What slotsBetween counts up to unless told otherwise. */
export const DEFAULT_SLOT_LIMIT = 1_000;
export const DEFAULT_PREVIEW_COUNT = 5;

const cronError = (rule: string) => badRequest(`schedule.cron: ${rule}`, ['schedule', 'cron']);
const timezoneError = (rule: string) => badRequest(`schedule.timezone: ${rule}`, ['schedule', 'timezone']);

function checkCronText(cron: string): void {
  const text = cron.trim();
  if (!text) throw cronError(`must not be empty; give 5 fields (${FIELDS})`);
  if (text.length > CRON_MAX_LENGTH) throw cronError(`must be at most ${CRON_MAX_LENGTH} characters`);
  if (text.startsWith('@')) return;
  const fields = text.split(/\s+/).length;
  // croner would read 6 fields as seconds-first; runs that often are not what a task schedule is for.
  if (fields === 6) throw cronError(`must have 5 fields (${FIELDS}); 6-field crons with seconds are not supported`);
  if (fields !== 5) throw cronError(`must have 5 fields (${FIELDS}), got ${fields}`);
}

function checkTimezone(timezone: string): void {
  if (!timezone.trim()) throw timezoneError('must not be empty; give an IANA time zone such as "Europe/Berlin"');
  const resolved = resolvedTimeZone(timezone);
  if (resolved === undefined) throw timezoneError(`"${timezone}" is not a known IANA time zone (e.g. "Europe/Berlin")`);
  // Intl (Node 24) also takes bare offsets ("+02:00"); they carry no DST rules, so they are not a place.
  if (/^[+-]/.test(resolved)) throw timezoneError(`must be an IANA time zone name such as "Europe/Berlin", not a UTC offset`);
  try {
    new Cron('0 0 * * *', { timezone, paused: true }).nextRun(VALIDATION_REFERENCE);
  } catch {
    throw timezoneError(`"${timezone}" is not a time zone the scheduler supports`);
  }
}

/** croner's messages read "CronPattern: Invalid value for minute: 60"; keep the part after the prefix. */
const croneReason = (error: unknown) => (error instanceof Error ? error.message : String(error)).replace(/^CronPattern:\s*/, '');

/** The croner job for a schedule (never started: no callback, paused). Throws the 400s of validateSchedule. */
function cronOf(schedule: Schedule): Cron {
  checkCronText(schedule.cron);
  checkTimezone(schedule.timezone);
  try {
    return new Cron(schedule.cron.trim(), { timezone: schedule.timezone, paused: true, mode: '5-part', fixedTimeRule: 'no-wildcard' });
  } catch (error) {
    throw cronError(`is not a valid cron expression: ${croneReason(error)}`);
  }
}

/**
 * Throws a 400 naming schedule.cron or schedule.timezone: a malformed cron (not 5 fields, 6-field
 * second-level, empty), an unknown time zone, a cron that never runs, or one whose runs come closer
 * together than `minIntervalSeconds`: anywhere on the wall clock (computed from its fields over a
 * whole calendar cycle, leap days and month ends included) and around the DST changes of the year
 * after `reference` (default 2026-01-01, fixed so the verdict does not depend on the day it is asked).
 */
export function validateSchedule(schedule: Schedule, options: { minIntervalSeconds: number; reference?: Date }): void {
  const cron = cronOf(schedule);
  const reference = options.reference ?? VALIDATION_REFERENCE;
  if (!cron.nextRun(reference)) throw cronError('never runs: no date matches it (e.g. 31 February)');
  const gap = smallestGap(cron, schedule.timezone, reference, options.minIntervalSeconds);
  if (!gap || gap.seconds >= options.minIntervalSeconds) return;
  const minimum = `the minimum interval is ${describeSeconds(options.minIntervalSeconds)}`;
  const runs = gap.dstChange
    ? `runs ${describeSeconds(gap.seconds)} apart around the daylight-saving change of ${gap.dstChange.toISOString().slice(0, 10)}`
    : gap.regular
      ? `runs every ${describeSeconds(gap.seconds)}`
      : `runs as little as ${describeSeconds(gap.seconds)} apart${gap.example ? ` (${gap.example.from} and ${gap.example.to}, ${schedule.timezone} time)` : ''}`;
  throw cronError(`${runs}; ${minimum}`);
}

/** The next run strictly after `after`, or null if there is none. */
export function nextRunAfter(schedule: Schedule, after: Date): Date | null {
  return cronOf(schedule).nextRun(after);
}

/** The next `count` runs strictly after `after` (fewer only if the cron stops matching). */
export function nextRuns(schedule: Schedule, after: Date, count: number): Date[] {
  const n = Math.max(0, Math.floor(count));
  return n === 0 ? [] : cronOf(schedule).nextRuns(n, after);
}

/**
 * The runs in (from, to], for catch-up after downtime: how many were missed (counting stops at
 * `limit`, then `capped` is true) and the latest one, which is exact even when capped.
 */
export function slotsBetween(schedule: Schedule, from: Date, to: Date, limit = DEFAULT_SLOT_LIMIT): { count: number; latest: Date | null; capped: boolean } {
  const cron = cronOf(schedule);
  let count = 0;
  let latest: Date | null = null;
  let run = cron.nextRun(from);
  while (run && run.getTime() <= to.getTime()) {
    if (count >= limit) {
      // Past the cap: ask for the last run backwards instead of walking every slot to `to`.
      const last = cron.previousRuns(1, new Date(to.getTime() + 1))[0];
      return { count, latest: last ?? latest, capped: true };
    }
    count++;
    latest = run;
    run = cron.nextRun(run);
  }
  return { count, latest, capped: false };
}

/** The next `count` runs for display: wall-clock ISO 8601 with the zone's offset at that run, and UTC. */
export function previewRuns(schedule: Schedule, after: Date, count = DEFAULT_PREVIEW_COUNT): { at: string; utc: string }[] {
  return nextRuns(schedule, after, count).map((run) => ({ at: isoWithOffset(schedule.timezone, run), utc: run.toISOString() }));
}
