import type { Knex } from 'knex';

export interface CreditPeriod {
  start: Date;
  end: Date;
}

/**
 * Resolves an organization's current credit period. The default is the calendar month in UTC;
 * billing may install a resolver that follows the subscription's billing cycle instead.
 */
export type PeriodResolver = (db: Knex, organizationId: string, now: Date) => Promise<CreditPeriod | null>;

let resolver: PeriodResolver | null = null;

/** Billing calls this once at import time to make credit periods follow plan cycles. */
export function setCreditPeriodResolver(next: PeriodResolver | null): void {
  resolver = next;
}

export function calendarMonth(now: Date): CreditPeriod {
  const start = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
  const end = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1));
  return { start, end };
}

export async function currentPeriod(db: Knex, organizationId: string, now = new Date()): Promise<CreditPeriod> {
  return (resolver && (await resolver(db, organizationId, now))) ?? calendarMonth(now);
}
