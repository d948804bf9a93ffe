/**
 * Draw-down from grants: earliest expiry first, never-expiring last, then priority, then creation.
 * Grants are attributed when credits leave them, not when they are reserved (migrations/
 * 20261127185000_credit_attribution_at_capture.ts): the organization's `held` credits are covered
 * by the front of that order, captures spend from the front (inside `credit_resolve_hold`), and a
 * negative adjustment takes back from just behind the covered part. Grants are only changed while
 * the organization's balance row is locked, so no grant lock is needed.
 */
import type { Knex } from 'knex';

export interface Piece {
  grantId: string;
  amount: number;
}

/**
 * Takes `amount` off the grants' `remaining` right behind what open holds cover; call with the
 * balance row locked and the credits already taken off it (so they were available).
 */
export async function drawFromGrants(trx: Knex.Transaction, organizationId: string, amount: number): Promise<Piece[]> {
  const { rows } = await trx.raw(
    `SELECT d.grant_id, d.amount, d.running
       FROM credit_balances b, credit_draw(b.organization_id, ?::bigint, b.held - b.lingering, false) d
      WHERE b.organization_id = ?
      ORDER BY d.running`,
    [amount, organizationId],
  );
  const pieces = (rows as { grant_id: string; amount: string | number }[]).map((row) => ({ grantId: row.grant_id, amount: Number(row.amount) }));
  const total = pieces.reduce((sum, piece) => sum + piece.amount, 0);
  // The balance said these credits are available, so the grants must hold them: anything else is a broken ledger.
  if (total !== amount) throw new Error(`credit grants of ${organizationId} cover ${total} of ${amount} credits taken back`);
  return pieces;
}

/**
 * Of the organization's live grants in draw-down order, how many credits of each open holds cover
 * (the first `held - lingering` credits of the order): SQL for a select list over `credit_grants g`
 * joined with `credit_balances b` and ordered as the draw-down, live grants only.
 */
export const coveredByHolds = `greatest(0, least(g.remaining, coalesce(b.held - b.lingering, 0)
  - (sum(g.remaining) OVER (ORDER BY g.expires_at ASC NULLS LAST, g.priority ASC, g.seq ASC) - g.remaining)))`;
