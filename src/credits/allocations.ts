/**
 * Draw-down from grants: earliest expiry first, never-expiring last, then priority, then creation.
 * Holds draw (and captures and releases settle their allocations) inside `credit_reserve` and
 * `credit_resolve_hold` (migrations/20261123060000_credit_hold_functions.ts), in the same order;
 * negative adjustments draw here. Grants are only changed while the organization's balance row is
 * locked, so no grant lock is needed.
 */
import type { Knex } from 'knex';

export interface Piece {
  grantId: string;
  amount: number;
}

/** Takes `amount` off the grants' `remaining` in draw-down order; call with the balance row locked and the credits taken off it. */
export async function drawFromGrants(trx: Knex.Transaction, organizationId: string, amount: number): Promise<Piece[]> {
  const { rows } = await trx.raw(
    `WITH ordered AS (
       SELECT id, remaining, sum(remaining) OVER (ORDER BY expires_at ASC NULLS LAST, priority ASC, seq ASC) AS running
         FROM credit_grants
        WHERE organization_id = ? AND remaining > 0 AND expired_at IS NULL AND (expires_at IS NULL OR expires_at > now())
     ), taken AS (
       SELECT id, least(remaining, ?::bigint - (running - remaining)) AS take, running FROM ordered WHERE running - remaining < ?::bigint
     )
     UPDATE credit_grants g SET remaining = g.remaining - taken.take
       FROM taken WHERE g.id = taken.id
     RETURNING g.id AS grant_id, taken.take AS amount, taken.running AS running`,
    [organizationId, amount, amount],
  );
  const pieces = (rows as { grant_id: string; amount: number; running: number }[])
    .sort((a, b) => Number(a.running) - Number(b.running))
    .map((row) => ({ grantId: row.grant_id, amount: Number(row.amount) }));
  const total = pieces.reduce((sum, piece) => sum + piece.amount, 0);
  // The balance said these credits are available, so the grants must hold them: anything else is a broken ledger.
  if (total !== amount) throw new Error(`credit grants of ${organizationId} cover ${total} of ${amount} reserved credits`);
  return pieces;
}
