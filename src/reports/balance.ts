import type { Knex } from 'knex';
import { readBalance } from '../credits/index.ts';

const round = (value: number, places: number) => Math.round(value * 10 ** places) / 10 ** places;

/**
 * Balance and runway: credits spent per day over the last 7 and 30 days (ledger captures) and
 * how many days the available credits last at each rate (null when nothing is being spent).
 */
export async function balanceReport(db: Knex, organizationId: string) {
  const balance = await readBalance(db, organizationId);
  const { rows } = await db.raw(
    `SELECT coalesce(sum(amount) FILTER (WHERE created_at >= now() - interval '7 days'), 0)::bigint AS spent_7,
            coalesce(sum(amount), 0)::bigint AS spent_30, now() AS as_of
       FROM credit_ledger_entries
      WHERE organization_id = ? AND kind = 'capture' AND created_at >= now() - interval '30 days'`,
    [organizationId],
  );
  const spent7 = Number(rows[0].spent_7);
  const spent30 = Number(rows[0].spent_30);
  const total = balance.granted - balance.captured - balance.expired;
  const available = total - balance.held;
  const burn7 = spent7 / 7;
  const burn30 = spent30 / 30;
  const runway = (burn: number) => (burn > 0 ? round(available / burn, 1) : null);
  return {
    organization_id: organizationId,
    balance: total,
    held: balance.held,
    available,
    burn_rate: { last_7_days: round(burn7, 2), last_30_days: round(burn30, 2) },
    spent: { last_7_days: spent7, last_30_days: spent30 },
    runway_days: { last_7_days: runway(burn7), last_30_days: runway(burn30) },
    as_of: (rows[0].as_of as Date).toISOString(),
  };
}
