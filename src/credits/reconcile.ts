import type { Knex } from 'knex';

export interface Discrepancy {
  organization_id: string;
  what: 'balance' | 'grant' | 'hold';
  id: string;
  stored: Record<string, number>;
  from_ledger: Record<string, number>;
}

/**
 * Recomputes every maintained figure from the immutable ledger rows and lists what disagrees:
 * balances (granted, captured, held, expired), grant `remaining` and hold `captured`/`released`;
 * and the balance's `lingering` against the expired grants' `remaining` (credits open holds keep).
 * An empty list means the ledger reconciles exactly. Pass an organization to check only it.
 *
 * A grant's `remaining` is what of it is not yet spent, expired or taken back: its own ledger rows
 * (issued → available in; → spent, → expired, available → issued out). Holds and releases move
 * credits between available and held without changing that (rows of holds placed before
 * 2026-11-27 name a grant too, and count for nothing here either).
 */
export async function reconcileCredits(db: Knex, organizationId?: string): Promise<Discrepancy[]> {
  const scope = organizationId === undefined ? 'true' : 'organization_id = :org';
  const bindings = organizationId === undefined ? {} : { org: organizationId };
  const balances = await db.raw(
    `WITH moved AS (
       SELECT organization_id,
              -- Negative adjustments (available → issued) take credits back out of what was granted.
              coalesce(sum(amount) FILTER (WHERE from_account = 'issued' AND to_account = 'available'), 0)
                - coalesce(sum(amount) FILTER (WHERE from_account = 'available' AND to_account = 'issued'), 0) AS granted,
              coalesce(sum(amount) FILTER (WHERE from_account = 'held' AND to_account = 'spent'), 0) AS captured,
              coalesce(sum(amount) FILTER (WHERE to_account = 'held'), 0) - coalesce(sum(amount) FILTER (WHERE from_account = 'held'), 0) AS held,
              coalesce(sum(amount) FILTER (WHERE to_account = 'expired'), 0) AS expired
         FROM credit_ledger_entries WHERE ${scope} GROUP BY organization_id
     ), stored AS (SELECT * FROM credit_balances WHERE ${scope})
     SELECT coalesce(s.organization_id, m.organization_id) AS organization_id,
            coalesce(s.granted, 0) AS s_granted, coalesce(s.captured, 0) AS s_captured, coalesce(s.held, 0) AS s_held, coalesce(s.expired, 0) AS s_expired,
            coalesce(m.granted, 0) AS m_granted, coalesce(m.captured, 0) AS m_captured, coalesce(m.held, 0) AS m_held, coalesce(m.expired, 0) AS m_expired
       FROM stored s FULL JOIN moved m ON m.organization_id = s.organization_id
      WHERE (coalesce(s.granted, 0), coalesce(s.captured, 0), coalesce(s.held, 0), coalesce(s.expired, 0))
            IS DISTINCT FROM (coalesce(m.granted, 0), coalesce(m.captured, 0), coalesce(m.held, 0), coalesce(m.expired, 0))`,
    bindings,
  );
  const grants = await db.raw(
    `WITH grants AS (
       SELECT g.organization_id, g.id, g.remaining AS stored,
              coalesce(sum(CASE WHEN e.from_account = 'issued' THEN e.amount WHEN e.to_account IN ('spent', 'expired', 'issued') THEN -e.amount ELSE 0 END), 0) AS from_ledger
         FROM credit_grants g LEFT JOIN credit_ledger_entries e ON e.grant_id = g.id
        WHERE ${scope.replace('organization_id', 'g.organization_id')}
        GROUP BY g.id
     )
     SELECT * FROM grants WHERE stored <> from_ledger`,
    bindings,
  );
  const holds = await db.raw(
    `SELECT h.organization_id, h.id, h.captured, h.released,
            coalesce(sum(e.amount) FILTER (WHERE e.kind = 'capture'), 0) AS l_captured,
            coalesce(sum(e.amount) FILTER (WHERE e.kind = 'release'), 0) AS l_released,
            coalesce(sum(e.amount) FILTER (WHERE e.kind = 'hold'), 0) AS l_amount, h.amount
       FROM credit_holds h LEFT JOIN credit_ledger_entries e ON e.hold_id = h.id
      WHERE ${scope.replace('organization_id', 'h.organization_id')}
      GROUP BY h.id
     HAVING (h.captured, h.released, h.amount) IS DISTINCT FROM
            (coalesce(sum(e.amount) FILTER (WHERE e.kind = 'capture'), 0), coalesce(sum(e.amount) FILTER (WHERE e.kind = 'release'), 0), coalesce(sum(e.amount) FILTER (WHERE e.kind = 'hold'), 0))`,
    bindings,
  );
  const lingering = await db.raw(
    `SELECT b.organization_id, b.lingering AS stored, coalesce(sum(g.remaining), 0) AS from_grants
       FROM credit_balances b LEFT JOIN credit_grants g ON g.organization_id = b.organization_id AND g.expired_at IS NOT NULL
      WHERE ${scope.replace('organization_id', 'b.organization_id')}
      GROUP BY b.organization_id HAVING b.lingering <> coalesce(sum(g.remaining), 0)`,
    bindings,
  );
  const n = (value: unknown) => Number(value);
  return [
    ...balances.rows.map((r: Record<string, unknown>) => ({
      organization_id: r.organization_id as string,
      what: 'balance' as const,
      id: r.organization_id as string,
      stored: { granted: n(r.s_granted), captured: n(r.s_captured), held: n(r.s_held), expired: n(r.s_expired) },
      from_ledger: { granted: n(r.m_granted), captured: n(r.m_captured), held: n(r.m_held), expired: n(r.m_expired) },
    })),
    ...lingering.rows.map((r: Record<string, unknown>) => ({
      organization_id: r.organization_id as string,
      what: 'balance' as const,
      id: r.organization_id as string,
      stored: { lingering: n(r.stored) },
      from_ledger: { lingering: n(r.from_grants) },
    })),
    ...grants.rows.map((r: Record<string, unknown>) => ({
      organization_id: r.organization_id as string,
      what: 'grant' as const,
      id: r.id as string,
      stored: { remaining: n(r.stored) },
      from_ledger: { remaining: n(r.from_ledger) },
    })),
    ...holds.rows.map((r: Record<string, unknown>) => ({
      organization_id: r.organization_id as string,
      what: 'hold' as const,
      id: r.id as string,
      stored: { amount: n(r.amount), captured: n(r.captured), released: n(r.released) },
      from_ledger: { amount: n(r.l_amount), captured: n(r.l_captured), released: n(r.l_released) },
    })),
  ];
}
