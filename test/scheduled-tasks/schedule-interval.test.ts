import { expect } from 'chai';
import { Cron } from 'croner';
import { isAppError } from '../../src/core/errors.ts';
import { firesOnDay, smallestWallClockGap } from '../../src/scheduled-tasks/schedule-calendar.ts';
import { validateSchedule } from '../../src/scheduled-tasks/schedule.ts';

const FIVE_MINUTES = { minIntervalSeconds: 300 };
const MINUTE = 1;
const DAY = 1440;

function refusal(run: () => void): string {
  try {
    run();
  } catch (error) {
    expect(isAppError(error, 'validation_failed'), String(error)).to.equal(true);
    const appError = error as { message: string; issues: { path: unknown[] }[] };
    expect(appError.issues[0]!.path).to.deep.equal(['schedule', 'cron']);
    return appError.message;
  }
  return 'accepted';
}

describe('scheduled tasks: the true minimum interval of a cron', () => {
  it('computes the smallest wall-clock gap from the fields: minute, hour and day wraps, month ends, leap days, weekdays', () => {
    // [cron, gap in minutes, where it first occurs from 2026 (wall clock)]
    const table: [string, number, string, string][] = [
      // The issue's: 23:59 on 29 February 2028, then 00:00 on 1 March (the 200 sampled runs end in late 2026).
      ['0,59 0,6,12,18,23 1,29 * *', MINUTE, '2028-02-29 23:59', '2028-03-01 00:00'],
      // Month ends of each length: 31 → 1, 30 → 1, and February's 28 → 1 (non-leap years only).
      ['0,59 0,23 31,1 * *', MINUTE, '2026-01-31 23:59', '2026-02-01 00:00'],
      ['0,59 0,23 30,1 * *', MINUTE, '2026-04-30 23:59', '2026-05-01 00:00'],
      ['0,59 0,23 28,1 * *', MINUTE, '2026-02-28 23:59', '2026-03-01 00:00'],
      ['0,59 0,23 L,1 * *', MINUTE, '2026-01-31 23:59', '2026-02-01 00:00'],
      // Minute 59 → the next hour's minute 0, and consecutive minutes within an hour.
      ['0,59 8,9 * * *', MINUTE, '2026-01-01 08:59', '2026-01-01 09:00'],
      ['0,10,45 9 * * *', 10, '2026-01-01 09:00', '2026-01-01 09:10'],
      ['0 0,12 * * *', 720, '2026-01-01 00:00', '2026-01-01 12:00'],
      // 23 and 0 both fire but the days never follow each other: the day wrap is 2 days minus 23 hours.
      ['0 0,23 * * 1,3,5', 1380, '2026-01-02 00:00', '2026-01-02 23:00'],
      ['0 0,23 1,3,5 * *', 1380, '2026-01-01 00:00', '2026-01-01 23:00'],
      ['0 23,0 * * 5,6', 60, '2026-01-02 23:00', '2026-01-03 00:00'],
      // Day-of-month OR day-of-week (croner's default with both restricted): the Friday before a Saturday 13th.
      ['0 9 13 * 5', DAY, '2026-06-12 09:00', '2026-06-13 09:00'],
      // With `+`, AND: Friday the 13th only, at least four weeks apart.
      ['0 9 13 * +5', 28 * DAY, '2026-02-13 09:00', '2026-03-13 09:00'],
      ['0 9 * * 1-5', DAY, '2026-01-01 09:00', '2026-01-02 09:00'],
      ['59 23 L * *', 28 * DAY, '2026-01-31 23:59', '2026-02-28 23:59'],
      ['0 0 * * 5#L', 28 * DAY, '2026-01-30 00:00', '2026-02-27 00:00'],
      ['@weekly', 7 * DAY, '2026-01-04 00:00', '2026-01-11 00:00'],
      // A leap day: every four years (2100 is no leap year, so 2096 → 2104 is eight).
      ['0 0 29 2 *', 1461 * DAY, '2028-02-29 00:00', '2032-02-29 00:00'],
    ];
    for (const [cron, minutes, from, to] of table) expect(smallestWallClockGap(cron, 2026), cron).to.deep.equal({ minutes, from, to });
    expect(smallestWallClockGap('0 0 31 2 *', 2026)).to.equal(undefined);
  });

  it('matches days exactly as croner does (L, LW, W, #n, #L, +, OR, names, ?) through leap and century years', () => {
    const crons = [
      '0 0 1,29 * *',
      '0 0 L * *',
      '0 0 LW * *',
      '0 0 1W * *',
      '0 0 15W * *',
      '0 0 31W * *',
      '0 0 * * 5#L',
      '0 0 * * 1#1,3#3',
      '0 0 13 * 5',
      '0 0 13 * +5',
      '0 0 ? * MON-FRI',
      '0 0 L 2 *',
      '0 0 */10 JAN,FEB,DEC SUN',
      '0 0 1-7 * 1',
      '@monthly',
      '0 0 * * 7',
    ];
    const days: Date[] = [];
    for (const [from, count] of [
      [Date.UTC(2027, 11, 1), 800],
      [Date.UTC(2100, 0, 1), 120],
    ] as const)
      for (let i = 0; i < count; i++) days.push(new Date(from + i * 86_400_000));
    for (const cron of crons) {
      const reference = new Cron(cron, { timezone: 'UTC', paused: true, mode: '5-part' });
      const first = reference.nextRun(new Date(Date.UTC(2027, 11, 1) - 1));
      const at = (day: Date) => new Date(day.getTime() + first!.getUTCHours() * 3_600_000 + first!.getUTCMinutes() * 60_000);
      const differing = days.filter((day) => firesOnDay(cron, day) !== reference.match(at(day))).map((day) => day.toISOString().slice(0, 10));
      expect(differing, cron).to.deep.equal([]);
    }
  });

  it('refuses a schedule whose closest runs are rarer than any sample, saying where, in the task’s zone', () => {
    const issue = '0,59 0,6,12,18,23 1,29 * *';
    expect(refusal(() => validateSchedule({ cron: issue, timezone: 'UTC' }, FIVE_MINUTES))).to.equal(
      'schedule.cron: runs as little as 1 minute apart (2028-02-29 23:59 and 2028-03-01 00:00, UTC time); the minimum interval is 5 minutes',
    );
    // The wall clock is the zone's: the same two runs in Berlin (no DST change near 1 March).
    expect(refusal(() => validateSchedule({ cron: issue, timezone: 'Europe/Berlin' }, FIVE_MINUTES))).to.equal(
      'schedule.cron: runs as little as 1 minute apart (2028-02-29 23:59 and 2028-03-01 00:00, Europe/Berlin time); the minimum interval is 5 minutes',
    );
    expect(refusal(() => validateSchedule({ cron: '0,59 0,23 30,1 * *', timezone: 'UTC' }, FIVE_MINUTES))).to.match(
      /^schedule\.cron: runs as little as 1 minute apart/,
    );
    // A gap only a DST change makes is still found and named: 01:59 EST, then 03:00 EDT.
    expect(refusal(() => validateSchedule({ cron: '0,59 1,3 * * *', timezone: 'America/New_York' }, FIVE_MINUTES))).to.equal(
      'schedule.cron: runs 1 minute apart around the daylight-saving change of 2026-03-08; the minimum interval is 5 minutes',
    );
    // At or above the limit: accepted.
    for (const cron of ['0 0,23 * * 1,3,5', '0 9 13 * 5', '0,5 0,23 1,29 * *', '*/5 * * * *'])
      expect(
        refusal(() => validateSchedule({ cron, timezone: 'Europe/Berlin' }, FIVE_MINUTES)),
        cron,
      ).to.equal('accepted');
    expect(refusal(() => validateSchedule({ cron: '0,59 0,6,12,18,23 1,28 * *', timezone: 'UTC' }, FIVE_MINUTES))).to.match(/1 minute apart/);
  });

  it('stays fast on dense and sparse crons alike (one calendar cycle, no run-by-run walk)', () => {
    const started = performance.now();
    for (const cron of ['0 0 * * 1,3,5', '59 23 L * *', '0 0 * * 5#L', '0 9 29 2 +1', '* * * * *']) smallestWallClockGap(cron, 2026);
    expect(performance.now() - started).to.be.lessThan(2_000);
  });
});
