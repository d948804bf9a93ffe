import type { CreditPeriod, CreditPeriods } from '../platform/deps.ts';

export type { CreditPeriod, CreditPeriods };

export function calendarMonth(now: Date): CreditPeriod {
  const start = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
  const end = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1));
  return { start, end };
}
