/**
 * The plan catalog. Prices are in minor units (cents) per monthly period; `monthlyCredits` is the
 * allowance granted at the start of every period (a plan-cycle refill).
 */
export const planKeys = ['free', 'pro', 'team'] as const;
export type PlanKey = (typeof planKeys)[number];

export interface Plan {
  key: PlanKey;
  name: string;
  /** Monthly price in minor units of `currency`. */
  priceMinor: number;
  currency: 'usd';
  monthlyCredits: number;
  /** Stripe price `lookup_key` of the plan's monthly price (free has no Stripe price). */
  stripeLookupKey: string | null;
}

export const plans: Record<PlanKey, Plan> = {
  // Free has no monthly allowance: its credits are the one-off starter grant (STARTER_CREDITS).
  free: { key: 'free', name: 'Free', priceMinor: 0, currency: 'usd', monthlyCredits: 0, stripeLookupKey: null },
  pro: { key: 'pro', name: 'Pro', priceMinor: 2000, currency: 'usd', monthlyCredits: 5000, stripeLookupKey: 'workspace_pro_monthly' },
  team: { key: 'team', name: 'Team', priceMinor: 8000, currency: 'usd', monthlyCredits: 25000, stripeLookupKey: 'workspace_team_monthly' },
};

export const isPlanKey = (value: string): value is PlanKey => (planKeys as readonly string[]).includes(value);

/** Rank for "is this an upgrade": more money per period is up. */
export const isUpgrade = (from: Plan, to: Plan) => to.priceMinor > from.priceMinor;

export const planByStripeLookupKey = (lookupKey: string | null | undefined): Plan | undefined =>
  Object.values(plans).find((plan) => plan.stripeLookupKey !== null && plan.stripeLookupKey === lookupKey);

/** Minor units → the decimal amount shown to users (billing events carry `amount` as a number). */
export const toMajor = (minor: number) => Math.round(minor) / 100;

/** `date` plus `months` calendar months in UTC, clamped to the month's last day (Jan 31 + 1 → Feb 28). */
export function addMonths(date: Date, months: number): Date {
  const target = new Date(
    Date.UTC(date.getUTCFullYear(), date.getUTCMonth() + months, 1, date.getUTCHours(), date.getUTCMinutes(), date.getUTCSeconds(), date.getUTCMilliseconds()),
  );
  const lastDay = new Date(Date.UTC(target.getUTCFullYear(), target.getUTCMonth() + 1, 0)).getUTCDate();
  target.setUTCDate(Math.min(date.getUTCDate(), lastDay));
  return target;
}

/** The monthly period, counted from `anchor`, that contains `now`. */
export function periodContaining(anchor: Date, now: Date): { start: Date; end: Date } {
  let months = (now.getUTCFullYear() - anchor.getUTCFullYear()) * 12 + (now.getUTCMonth() - anchor.getUTCMonth());
  if (addMonths(anchor, months) > now) months -= 1;
  if (months < 0) months = 0;
  while (addMonths(anchor, months + 1) <= now) months += 1;
  return { start: addMonths(anchor, months), end: addMonths(anchor, months + 1) };
}

/** Share of the period still ahead at `now` (0‥1), the basis of every proration. */
export function remainingFraction(periodStart: Date, periodEnd: Date, now: Date): number {
  const total = periodEnd.getTime() - periodStart.getTime();
  if (total <= 0) return 0;
  return Math.min(1, Math.max(0, (periodEnd.getTime() - now.getTime()) / total));
}
