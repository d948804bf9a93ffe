/**
 * Time-zone arithmetic for schedules, on `Intl` alone (no date library): the UTC offset of a zone
 * at an instant, ISO 8601 with that offset, and where the offset changes (DST transitions).
 */

const formatters = new Map<string, Intl.DateTimeFormat>();

/** One formatter per zone: constructing Intl.DateTimeFormat is the expensive part. */
function formatterOf(timeZone: string): Intl.DateTimeFormat {
  let formatter = formatters.get(timeZone);
  if (!formatter) {
    formatter = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
      timeZoneName: 'longOffset',
    });
    formatters.set(timeZone, formatter);
  }
  return formatter;
}

/** The zone name as Intl resolves it (e.g. "utc" → "UTC"), or undefined when Intl does not know it. */
export function resolvedTimeZone(timeZone: string): string | undefined {
  try {
    return new Intl.DateTimeFormat('en-US', { timeZone }).resolvedOptions().timeZone;
  } catch {
    return undefined;
  }
}

function partsOf(timeZone: string, at: Date): Record<string, string> {
  const parts: Record<string, string> = {};
  for (const part of formatterOf(timeZone).formatToParts(at)) parts[part.type] = part.value;
  return parts;
}

/** "GMT+02:00" → "+02:00"; plain "GMT" (offset zero) → "+00:00". */
function offsetText(parts: Record<string, string>): string {
  const name = parts.timeZoneName ?? 'GMT';
  return name === 'GMT' ? '+00:00' : name.slice(3);
}

/** Minutes east of UTC in `timeZone` at `at` (Berlin in summer: 120). */
export function offsetMinutes(timeZone: string, at: Date): number {
  const match = /^([+-])(\d{2}):(\d{2})$/.exec(offsetText(partsOf(timeZone, at)));
  if (!match) return 0;
  const minutes = Number(match[2]) * 60 + Number(match[3]);
  return match[1] === '-' ? -minutes : minutes;
}

/** ISO 8601 of `at` as a wall clock in `timeZone`, with its offset: "2026-03-29T03:00:00+02:00". */
export function isoWithOffset(timeZone: string, at: Date): string {
  const p = partsOf(timeZone, at);
  return `${p.year}-${p.month}-${p.day}T${p.hour}:${p.minute}:${p.second}${offsetText(p)}`;
}

const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;

/**
 * The instants in [from, to) at which the zone's UTC offset changes, to the minute. Sampled daily
 * (zones change at most twice a year, never twice in a day), then bisected within the day.
 */
export function offsetTransitions(timeZone: string, from: Date, to: Date): Date[] {
  const transitions: Date[] = [];
  let before = from.getTime();
  let beforeOffset = offsetMinutes(timeZone, from);
  while (before < to.getTime()) {
    const after = Math.min(before + DAY, to.getTime());
    const afterOffset = offsetMinutes(timeZone, new Date(after));
    if (afterOffset !== beforeOffset) {
      // Invariant: the offset at `low` is the old one and at `high` the new one.
      let low = before;
      let high = after;
      while (high - low > MINUTE) {
        const middle = low + Math.floor((high - low) / 2 / MINUTE) * MINUTE || low + MINUTE;
        if (offsetMinutes(timeZone, new Date(middle)) === beforeOffset) low = middle;
        else high = middle;
      }
      transitions.push(new Date(high));
    }
    before = after;
    beforeOffset = afterOffset;
  }
  return transitions;
}
