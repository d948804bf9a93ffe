/**
 * The exact smallest gap between two runs of a cron on the wall clock, from its fields rather than
 * from a sample of runs: a 5-field cron fires on every (day, hour, minute) of three sets, so the
 * closest two runs are consecutive minutes of an hour, the last minute of an hour and the first of
 * the next firing hour, or the last run of a firing day and the first of the next firing day —
 * `0,59 0,6,12,18,23 1,29 * *` runs at 23:59 on 29 February 2028 and at 00:00 on 1 March.
 *
 * The firing days are enumerated over one whole Gregorian cycle (400 years = 146,097 days, a whole
 * number of weeks, so month lengths, leap days and weekdays all repeat after it), matched the way
 * croner 11 matches them: its parsed pattern (lists, ranges, steps, names, nicknames), `L`, `LW`,
 * `W`, `#n`, and day-of-month OR day-of-week when both are restricted (AND with a `+` prefix).
 * Daylight-saving changes are not wall-clock gaps: schedule-interval.ts scans those separately.
 */
import { CronPattern } from 'croner';

/** The gap in minutes and an instance of it (wall-clock "YYYY-MM-DD HH:MM"), when the cron runs at least twice. */
export interface WallClockGap {
  minutes: number;
  from: string;
  to: string;
}

const CYCLE_YEARS = 400;
/** croner's bits for the 1st…5th weekday of a month (`#1`…`#5`) and for the last one (`#L`). */
const NTH = [1, 2, 4, 8, 16] as const;
const LAST_NTH = 32;

const indexes = (flags: readonly number[]) => flags.flatMap((flag, index) => (flag ? [index] : []));
const daysIn = (year: number, month: number) => new Date(Date.UTC(year, month + 1, 0)).getUTCDate();

/** The parsed pattern's day rules, read once (the scan asks them 146,097 times). */
interface DayRules {
  months: readonly number[];
  dates: readonly number[];
  nearest: readonly number[];
  lastWeekday: boolean;
  lastDay: boolean;
  weekdays: readonly number[] | null;
  both: boolean;
}

const dayRulesOf = (p: CronPattern): DayRules => ({
  months: p.month,
  dates: p.day,
  nearest: indexes(p.nearestWeekdays).map((index) => index + 1),
  lastWeekday: p.lastWeekday,
  lastDay: p.lastDayOfMonth,
  weekdays: p.starDOW ? null : p.dayOfWeek,
  // Both restricted: croner ORs them unless the weekdays carry `+`; a `*` day-of-month leaves the weekdays alone.
  both: p.useAndLogic || p.starDOM,
});

/** `nW`: a Saturday moves to the Friday before (the Monday after on the 1st), a Sunday to the Monday after (the Friday before on the last day). */
function nearestWeekday(target: number, last: number, firstWeekday: number): number {
  const weekday = (firstWeekday + target - 1) % 7;
  if (weekday === 0) return target === last ? target - 2 : target + 1;
  if (weekday === 6) return target === 1 ? target + 2 : target - 1;
  return target;
}

/** Whether the cron fires on `day` of a month with `last` days whose 1st is `firstWeekday` (0 = Sunday), as croner 11 decides it. */
function firesOn(rules: DayRules, day: number, last: number, firstWeekday: number): boolean {
  let byDate = rules.dates[day - 1] === 1;
  for (const target of rules.nearest) if (target <= last && nearestWeekday(target, last, firstWeekday) === day) byDate = true;
  if (rules.lastWeekday) {
    const weekday = (firstWeekday + last - 1) % 7;
    if (day === (weekday === 0 ? last - 2 : weekday === 6 ? last - 1 : last)) byDate = true;
  }
  if (rules.lastDay && day === last) byDate = true;
  if (rules.weekdays === null) return byDate;
  const bits = rules.weekdays[(firstWeekday + day - 1) % 7] ?? 0;
  const byWeekday = bits !== 0 && ((bits & NTH[Math.floor((day - 1) / 7)]!) !== 0 || ((bits & LAST_NTH) !== 0 && day + 7 > last));
  return rules.both ? byDate && byWeekday : byDate || byWeekday;
}

/** The firing days of one Gregorian cycle from `fromYear` (and the first one after it), as day numbers since the epoch; stops early at two consecutive days. */
function firingDays(p: CronPattern, fromYear: number): number[] {
  const rules = dayRulesOf(p);
  const days: number[] = [];
  let first = Date.UTC(fromYear, 0, 1) / 86_400_000;
  for (let year = fromYear; year <= fromYear + CYCLE_YEARS; year++)
    for (let month = 0; month < 12; month++) {
      const last = daysIn(year, month);
      if (rules.months[month] === 1) {
        // 1970-01-01 (day 0) was a Thursday.
        const firstWeekday = (((first + 4) % 7) + 7) % 7;
        for (let day = 1; day <= last; day++) {
          if (!firesOn(rules, day, last, firstWeekday)) continue;
          const at = first + day - 1;
          // Nothing comes closer than consecutive days; and the cycle is closed by its first day.
          if (days.length > 0 && at - days[days.length - 1]! === 1) return [...days, at];
          days.push(at);
          if (year === fromYear + CYCLE_YEARS) return days;
        }
      }
      first += last;
    }
  return days;
}

/** Whether the cron fires on the calendar day of `date` (its UTC date): the scan's rule, exported so tests can hold it against croner's own `match`. */
export function firesOnDay(cron: string, date: Date): boolean {
  const p = new CronPattern(cron, undefined, { mode: '5-part' });
  const year = date.getUTCFullYear();
  const month = date.getUTCMonth();
  const firstWeekday = new Date(Date.UTC(year, month, 1)).getUTCDay();
  return p.month[month] === 1 && firesOn(dayRulesOf(p), date.getUTCDate(), daysIn(year, month), firstWeekday);
}

const wallClock = (day: number, minuteOfDay: number) => {
  const at = new Date(day * 86_400_000 + minuteOfDay * 60_000).toISOString();
  return `${at.slice(0, 10)} ${at.slice(11, 16)}`;
};

/** The smallest wall-clock gap of a 5-field cron (or nickname), with where it first occurs from `fromYear`; undefined when it runs once or never. */
export function smallestWallClockGap(cron: string, fromYear: number): WallClockGap | undefined {
  const p = new CronPattern(cron, undefined, { mode: '5-part' });
  const minutes = indexes(p.minute);
  const hours = indexes(p.hour);
  const days = firingDays(p, fromYear);
  if (days.length === 0 || minutes.length === 0 || hours.length === 0) return undefined;
  const firstMinute = minutes[0]!;
  const lastMinute = minutes.at(-1)!;
  let best: { minutes: number; fromDay: number; from: number; toDay: number; to: number } | undefined;
  const consider = (gap: number, fromDay: number, from: number, toDay: number, to: number) => {
    if (best === undefined || gap < best.minutes) best = { minutes: gap, fromDay, from, toDay, to };
  };
  for (let i = 1; i < minutes.length; i++)
    consider(minutes[i]! - minutes[i - 1]!, days[0]!, hours[0]! * 60 + minutes[i - 1]!, days[0]!, hours[0]! * 60 + minutes[i]!);
  for (let i = 1; i < hours.length; i++) {
    const from = hours[i - 1]! * 60 + lastMinute;
    const to = hours[i]! * 60 + firstMinute;
    consider(to - from, days[0]!, from, days[0]!, to);
  }
  const lastOfDay = hours.at(-1)! * 60 + lastMinute;
  const firstOfDay = hours[0]! * 60 + firstMinute;
  for (let i = 1; i < days.length; i++) consider((days[i]! - days[i - 1]!) * 1440 - lastOfDay + firstOfDay, days[i - 1]!, lastOfDay, days[i]!, firstOfDay);
  if (!best) return undefined;
  const found = best as { minutes: number; fromDay: number; from: number; toDay: number; to: number };
  return { minutes: found.minutes, from: wallClock(found.fromDay, found.from), to: wallClock(found.toDay, found.to) };
}
