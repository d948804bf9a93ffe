import { expect } from 'chai';
import { isAppError } from '../../src/core/errors.ts';
import { nextRunAfter, nextRuns, previewRuns, type Schedule, slotsBetween, validateSchedule } from '../../src/scheduled-tasks/schedule.ts';

// Fixed reference dates only: the schedule math must not depend on the day the suite runs.
const FIVE_MINUTES = { minIntervalSeconds: 300 };
const utc = (cron: string): Schedule => ({ cron, timezone: 'UTC' });
const berlin = (cron: string): Schedule => ({ cron, timezone: 'Europe/Berlin' });
const newYork = (cron: string): Schedule => ({ cron, timezone: 'America/New_York' });
const iso = (dates: (Date | null)[]) => dates.map((date) => date?.toISOString() ?? null);

function expectRefusal(run: () => void, message: string, path: string[]): void {
  try {
    run();
  } catch (error) {
    expect(isAppError(error, 'validation_failed'), String(error)).to.equal(true);
    const appError = error as { status: number; message: string; issues: { path: unknown[]; message: string }[] };
    expect(appError.status).to.equal(400);
    expect(appError.message).to.equal(message);
    expect(appError.issues).to.deep.equal([{ path, message }]);
    return;
  }
  expect.fail(`expected a refusal: ${message}`);
}

describe('scheduled tasks: schedule', () => {
  describe('validateSchedule', () => {
    it('accepts ordinary crons, nicknames and IANA zones', () => {
      for (const schedule of [
        utc('*/5 * * * *'),
        utc('0 9 * * 1-5'),
        berlin('30 2 * * *'),
        newYork('0 9 * * MON-FRI'),
        utc('@daily'),
        { cron: '0 0 1 * *', timezone: 'Asia/Kolkata' },
      ])
        validateSchedule(schedule, FIVE_MINUTES);
    });

    it('refuses malformed crons, naming schedule.cron and the rule', () => {
      const cron = ['schedule', 'cron'];
      const fields = 'minute hour day-of-month month day-of-week';
      expectRefusal(() => validateSchedule(utc(''), FIVE_MINUTES), `schedule.cron: must not be empty; give 5 fields (${fields})`, cron);
      expectRefusal(() => validateSchedule(utc('   '), FIVE_MINUTES), `schedule.cron: must not be empty; give 5 fields (${fields})`, cron);
      expectRefusal(
        () => validateSchedule(utc('0 */5 * * * *'), FIVE_MINUTES),
        `schedule.cron: must have 5 fields (${fields}); 6-field crons with seconds are not supported`,
        cron,
      );
      expectRefusal(() => validateSchedule(utc('0 9 * *'), FIVE_MINUTES), `schedule.cron: must have 5 fields (${fields}), got 4`, cron);
      expectRefusal(() => validateSchedule(utc('0 0 9 * * * 2026'), FIVE_MINUTES), `schedule.cron: must have 5 fields (${fields}), got 7`, cron);
      expectRefusal(
        () => validateSchedule(utc('60 * * * *'), FIVE_MINUTES),
        'schedule.cron: is not a valid cron expression: Invalid value for minute: 60',
        cron,
      );
      expectRefusal(
        () => validateSchedule(utc('a b c d e'), FIVE_MINUTES),
        'schedule.cron: is not a valid cron expression: configuration entry 1 (a) contains illegal characters.',
        cron,
      );
      expectRefusal(() => validateSchedule(utc(`0 ${'1,'.repeat(100)}2 * * *`), FIVE_MINUTES), 'schedule.cron: must be at most 200 characters', cron);
    });

    it('refuses unknown time zones and bare offsets, naming schedule.timezone', () => {
      const timezone = ['schedule', 'timezone'];
      expectRefusal(
        () => validateSchedule({ cron: '0 9 * * *', timezone: 'Mars/Olympus' }, FIVE_MINUTES),
        'schedule.timezone: "Mars/Olympus" is not a known IANA time zone (e.g. "Europe/Berlin")',
        timezone,
      );
      expectRefusal(
        () => validateSchedule({ cron: '0 9 * * *', timezone: '' }, FIVE_MINUTES),
        'schedule.timezone: must not be empty; give an IANA time zone such as "Europe/Berlin"',
        timezone,
      );
      expectRefusal(
        () => validateSchedule({ cron: '0 9 * * *', timezone: '+02:00' }, FIVE_MINUTES),
        'schedule.timezone: must be an IANA time zone name such as "Europe/Berlin", not a UTC offset',
        timezone,
      );
    });

    it('refuses a cron that never runs', () => {
      expectRefusal(() => validateSchedule(utc('30 2 31 2 *'), FIVE_MINUTES), 'schedule.cron: never runs: no date matches it (e.g. 31 February)', [
        'schedule',
        'cron',
      ]);
      expect(nextRunAfter(utc('30 2 31 2 *'), new Date('2026-01-01T00:00:00Z'))).to.equal(null);
    });

    it('refuses runs closer together than the minimum interval, and accepts those at or above it', () => {
      const cron = ['schedule', 'cron'];
      expectRefusal(() => validateSchedule(utc('* * * * *'), FIVE_MINUTES), 'schedule.cron: runs every 1 minute; the minimum interval is 5 minutes', cron);
      expectRefusal(() => validateSchedule(utc('*/2 * * * *'), FIVE_MINUTES), 'schedule.cron: runs every 2 minutes; the minimum interval is 5 minutes', cron);
      expectRefusal(
        () => validateSchedule(utc('0,1 * * * *'), FIVE_MINUTES),
        'schedule.cron: runs as little as 1 minute apart; the minimum interval is 5 minutes',
        cron,
      );
      expectRefusal(
        () => validateSchedule(utc('0 9 * * 1-5'), { minIntervalSeconds: 2 * 86_400 }),
        'schedule.cron: runs as little as 1 day apart; the minimum interval is 2 days',
        cron,
      );
      validateSchedule(utc('*/5 * * * *'), FIVE_MINUTES);
      validateSchedule(utc('0 9 * * 1-5'), FIVE_MINUTES);
      validateSchedule(berlin('0 * * * *'), { minIntervalSeconds: 3_600 });
    });

    it('finds gaps that only a DST change creates', () => {
      // 02:30 is skipped on 2026-03-29 and moves to 03:00 CEST, 30 minutes before the 03:30 run.
      expect(iso(nextRuns(berlin('30 2,3 * * *'), new Date('2026-03-28T22:00:00Z'), 2))).to.deep.equal([
        '2026-03-29T01:00:00.000Z',
        '2026-03-29T01:30:00.000Z',
      ]);
      expectRefusal(
        () => validateSchedule(berlin('30 2,3 * * *'), { minIntervalSeconds: 3_600 }),
        'schedule.cron: runs 30 minutes apart around the daylight-saving change of 2026-03-29; the minimum interval is 1 hour',
        ['schedule', 'cron'],
      );
      // Found by the DST scan too, when the change lies beyond the first 200 runs (the year after June 2026).
      expectRefusal(
        () => validateSchedule(berlin('30 2,3 * * *'), { minIntervalSeconds: 3_600, reference: new Date('2026-06-01T00:00:00Z') }),
        'schedule.cron: runs 30 minutes apart around the daylight-saving change of 2027-03-28; the minimum interval is 1 hour',
        ['schedule', 'cron'],
      );
      // Elsewhere it is hourly: fine in UTC, which has no DST.
      validateSchedule(utc('30 2,3 * * *'), { minIntervalSeconds: 3_600 });
    });
  });

  describe('nextRunAfter and nextRuns', () => {
    it('returns runs strictly after the given instant', () => {
      const daily = utc('0 9 * * *');
      expect(nextRunAfter(daily, new Date('2026-01-01T08:59:59.500Z'))?.toISOString()).to.equal('2026-01-01T09:00:00.000Z');
      expect(nextRunAfter(daily, new Date('2026-01-01T09:00:00.000Z'))?.toISOString()).to.equal('2026-01-02T09:00:00.000Z');
      expect(iso(nextRuns(utc('0 9 * * 1-5'), new Date('2026-01-02T10:00:00Z'), 3))).to.deep.equal([
        '2026-01-05T09:00:00.000Z',
        '2026-01-06T09:00:00.000Z',
        '2026-01-07T09:00:00.000Z',
      ]);
      expect(nextRuns(daily, new Date('2026-01-01T00:00:00Z'), 0)).to.deep.equal([]);
    });

    it('reads the cron in the schedule time zone', () => {
      expect(nextRunAfter(berlin('0 9 * * *'), new Date('2026-01-01T00:00:00Z'))?.toISOString()).to.equal('2026-01-01T08:00:00.000Z');
    });

    it('refuses an invalid schedule with the same 400 as validateSchedule', () => {
      expectRefusal(
        () => nextRunAfter(utc('* * * * * *'), new Date('2026-01-01T00:00:00Z')),
        'schedule.cron: must have 5 fields (minute hour day-of-month month day-of-week); 6-field crons with seconds are not supported',
        ['schedule', 'cron'],
      );
    });
  });

  describe('slotsBetween', () => {
    it('counts the slots missed during downtime, (from, to], and names the latest', () => {
      // Down from 10:00 (that run happened) to 15:00: missed 11, 12, 13, 14 and 15.
      expect(slotsBetween(utc('0 * * * *'), new Date('2026-01-01T10:00:00Z'), new Date('2026-01-01T15:00:00Z'))).to.deep.equal({
        count: 5,
        latest: new Date('2026-01-01T15:00:00Z'),
        capped: false,
      });
      expect(slotsBetween(utc('0 * * * *'), new Date('2026-01-01T10:00:00Z'), new Date('2026-01-01T14:59:59Z'))).to.deep.equal({
        count: 4,
        latest: new Date('2026-01-01T14:00:00Z'),
        capped: false,
      });
      expect(slotsBetween(utc('0 * * * *'), new Date('2026-01-01T10:00:00Z'), new Date('2026-01-01T10:30:00Z'))).to.deep.equal({
        count: 0,
        latest: null,
        capped: false,
      });
    });

    it('stops counting at the limit but still names the true latest slot', () => {
      // 30 days down with an hourly task: 720 slots, capped at 100.
      expect(slotsBetween(utc('0 * * * *'), new Date('2026-01-01T00:00:00Z'), new Date('2026-01-31T00:30:00Z'), 100)).to.deep.equal({
        count: 100,
        latest: new Date('2026-01-31T00:00:00Z'),
        capped: true,
      });
      expect(slotsBetween(utc('0 * * * *'), new Date('2026-01-01T00:00:00Z'), new Date('2026-01-01T05:00:00Z'), 5)).to.deep.equal({
        count: 5,
        latest: new Date('2026-01-01T05:00:00Z'),
        capped: false,
      });
    });
  });

  describe('daylight saving time', () => {
    it('moves a local time skipped by spring-forward to the next valid instant, once that day (Berlin 2026-03-29)', () => {
      const runs = nextRuns(berlin('30 2 * * *'), new Date('2026-03-27T12:00:00Z'), 4);
      // 02:30 CET = 01:30Z; on the 29th 02:30 does not exist, so it runs at 03:00 CEST = 01:00Z; then 02:30 CEST = 00:30Z.
      expect(iso(runs)).to.deep.equal(['2026-03-28T01:30:00.000Z', '2026-03-29T01:00:00.000Z', '2026-03-30T00:30:00.000Z', '2026-03-31T00:30:00.000Z']);
      expect(slotsBetween(berlin('30 2 * * *'), new Date('2026-03-28T22:00:00Z'), new Date('2026-03-29T22:00:00Z')).count).to.equal(1);
      expect(previewRuns(berlin('30 2 * * *'), new Date('2026-03-28T22:00:00Z'), 1)[0]!.at).to.equal('2026-03-29T03:00:00+02:00');
    });

    it('runs a local time repeated by fall-back once, on its first occurrence (Berlin 2026-10-25)', () => {
      const daily = berlin('30 2 * * *');
      // 02:30 CEST = 00:30Z; 02:30 CET = 01:30Z comes again an hour later and is not run.
      expect(slotsBetween(daily, new Date('2026-10-24T22:00:00Z'), new Date('2026-10-25T22:00:00Z'))).to.deep.equal({
        count: 1,
        latest: new Date('2026-10-25T00:30:00Z'),
        capped: false,
      });
      // Even asked from between the two occurrences (a scheduler waking late), the repeat is not offered.
      expect(nextRunAfter(daily, new Date('2026-10-25T00:45:00Z'))?.toISOString()).to.equal('2026-10-26T01:30:00.000Z');
      // A list of hours is a fixed-time job too: 02:30 once, 14:30 once.
      expect(slotsBetween(berlin('30 2,14 * * *'), new Date('2026-10-24T22:00:00Z'), new Date('2026-10-25T22:00:00Z')).count).to.equal(2);
    });

    it('keeps interval jobs on elapsed time: a repeated hour runs in both occurrences, a skipped one not at all', () => {
      expect(iso(nextRuns(berlin('0 * * * *'), new Date('2026-10-24T23:30:00Z'), 3))).to.deep.equal([
        '2026-10-25T00:00:00.000Z',
        '2026-10-25T01:00:00.000Z',
        '2026-10-25T02:00:00.000Z',
      ]);
      expect(previewRuns(berlin('0 * * * *'), new Date('2026-10-24T23:30:00Z'), 3).map((run) => run.at)).to.deep.equal([
        '2026-10-25T02:00:00+02:00',
        '2026-10-25T02:00:00+01:00',
        '2026-10-25T03:00:00+01:00',
      ]);
      expect(previewRuns(berlin('0 * * * *'), new Date('2026-03-29T00:30:00Z'), 2).map((run) => run.at)).to.deep.equal([
        '2026-03-29T03:00:00+02:00',
        '2026-03-29T04:00:00+02:00',
      ]);
    });

    it('keeps a daily 09:00 in New York at 09:00 local across both US changes (UTC 14:00 → 13:00 → 14:00)', () => {
      const daily = newYork('0 9 * * *');
      expect(iso(nextRuns(daily, new Date('2026-03-07T00:00:00Z'), 2))).to.deep.equal(['2026-03-07T14:00:00.000Z', '2026-03-08T13:00:00.000Z']);
      expect(iso(nextRuns(daily, new Date('2026-10-31T00:00:00Z'), 2))).to.deep.equal(['2026-10-31T13:00:00.000Z', '2026-11-01T14:00:00.000Z']);
      expect(previewRuns(daily, new Date('2026-03-07T00:00:00Z'), 2).map((run) => run.at)).to.deep.equal([
        '2026-03-07T09:00:00-05:00',
        '2026-03-08T09:00:00-04:00',
      ]);
    });
  });

  describe('previewRuns', () => {
    it('gives five runs by default, with the offset before (+01:00) and after (+02:00) the Berlin change', () => {
      expect(previewRuns(berlin('0 12 * * *'), new Date('2026-03-27T00:00:00Z'))).to.deep.equal([
        { at: '2026-03-27T12:00:00+01:00', utc: '2026-03-27T11:00:00.000Z' },
        { at: '2026-03-28T12:00:00+01:00', utc: '2026-03-28T11:00:00.000Z' },
        { at: '2026-03-29T12:00:00+02:00', utc: '2026-03-29T10:00:00.000Z' },
        { at: '2026-03-30T12:00:00+02:00', utc: '2026-03-30T10:00:00.000Z' },
        { at: '2026-03-31T12:00:00+02:00', utc: '2026-03-31T10:00:00.000Z' },
      ]);
    });

    it('writes offset zero as +00:00 and half-hour zones exactly', () => {
      expect(previewRuns(utc('0 9 * * *'), new Date('2026-01-01T00:00:00Z'), 1)).to.deep.equal([
        { at: '2026-01-01T09:00:00+00:00', utc: '2026-01-01T09:00:00.000Z' },
      ]);
      expect(previewRuns({ cron: '0 9 * * *', timezone: 'Asia/Kolkata' }, new Date('2026-01-01T00:00:00Z'), 1)).to.deep.equal([
        { at: '2026-01-01T09:00:00+05:30', utc: '2026-01-01T03:30:00.000Z' },
      ]);
    });
  });
});
