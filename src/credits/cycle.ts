import type { Knex } from 'knex';

export interface CreditPeriod {
  start: Date;
  end: Date;
}

/**
 * How an organization's credit periods (spending limits, `/credits/cycle`) are cut. One is built
 * into `Deps.creditPeriods` by each composition root (web, worker), never installed by an import:
 * a process follows billing cycles because it was given `billingCyclePeriods`, not because some
 * module happened to load billing.
 */
export interface CreditPeriods {
  current(db: Knex, organizationId: string, now?: Date): Promise<CreditPeriod>;
}

export function calendarMonth(now: Date): CreditPeriod {
  const start = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
  const end = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1));
  return { start, end };
}
