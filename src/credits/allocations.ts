/**
 * Which grants pay for a hold. A hold reserves from grants in draw-down order (earliest expiry
 * first, never-expiring last, then priority, then creation); captures consume those reservations
 * in the same order and releases hand the rest back to the grants they came from. Grants are only
 * changed while the organization's balance row is locked, so no grant lock is needed.
 */
import type { Knex } from 'knex';
import { moveBalance } from './entries.ts';

export interface Piece {
  grantId: string;
  amount: number;
}

/** Call with the balance row locked and `amount` already reserved on it. */
export async function allocateFromGrants(trx: Knex.Transaction, holdId: string, organizationId: string, amount: number): Promise<Piece[]> {
  const pieces = await drawFromGrants(trx, organizationId, amount);
  await trx('credit_hold_allocations').insert(pieces.map((piece, position) => ({ hold_id: holdId, grant_id: piece.grantId, position, amount: piece.amount })));
  return pieces;
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

interface AllocationRest {
  position: number;
  grant_id: string;
  rest: number;
  grant_expired: boolean;
}

async function openAllocations(trx: Knex.Transaction, holdId: string): Promise<AllocationRest[]> {
  // A grant counts as expired once its time is up or the expiry job marked it (whichever came first).
  const { rows } = await trx.raw(
    `SELECT a.position, a.grant_id, a.amount - a.captured - a.released AS rest,
            (g.expired_at IS NOT NULL OR (g.expires_at IS NOT NULL AND g.expires_at <= now())) AS grant_expired
       FROM credit_hold_allocations a JOIN credit_grants g ON g.id = a.grant_id
      WHERE a.hold_id = ? AND a.amount - a.captured - a.released > 0
      ORDER BY a.position`,
    [holdId],
  );
  return rows as AllocationRest[];
}

/** Marks `amount` of the hold's reservations as captured, in allocation order. */
export async function capturePieces(trx: Knex.Transaction, holdId: string, amount: number): Promise<Piece[]> {
  const pieces: Piece[] = [];
  let left = amount;
  for (const allocation of await openAllocations(trx, holdId)) {
    if (left === 0) break;
    const take = Math.min(left, Number(allocation.rest));
    await trx('credit_hold_allocations').where({ hold_id: holdId, position: allocation.position }).increment('captured', take);
    pieces.push({ grantId: allocation.grant_id, amount: take });
    left -= take;
  }
  if (left !== 0) throw new Error(`hold ${holdId} has ${amount - left} of ${amount} credits left to capture`);
  return pieces;
}

/**
 * Releases everything not captured: back to each grant's `remaining`, or straight to expired when
 * the grant has expired meanwhile. Moves the balance (locking it) before touching grants.
 */
export async function releasePieces(
  trx: Knex.Transaction,
  organizationId: string,
  holdId: string,
  rest: number,
): Promise<(Piece & { grantExpired: boolean })[]> {
  // Lock the balance before reading grant states, so a concurrent grant expiry is either fully
  // before (expired_at seen) or fully after (it expires what this returns to `remaining`).
  await moveBalance(trx, organizationId, { held: -rest });
  const pieces = (await openAllocations(trx, holdId)).map((a) => ({ grantId: a.grant_id, amount: Number(a.rest), grantExpired: a.grant_expired }));
  const total = pieces.reduce((sum, piece) => sum + piece.amount, 0);
  if (total !== rest) throw new Error(`hold ${holdId} has ${total} credits allocated to release, expected ${rest}`);
  const lapsed = pieces.filter((piece) => piece.grantExpired).reduce((sum, piece) => sum + piece.amount, 0);
  if (lapsed > 0) await moveBalance(trx, organizationId, { expired: lapsed });
  await trx.raw('UPDATE credit_hold_allocations SET released = amount - captured WHERE hold_id = ? AND amount - captured - released > 0', [holdId]);
  for (const piece of pieces) {
    if (!piece.grantExpired) await trx('credit_grants').where({ id: piece.grantId }).increment('remaining', piece.amount);
  }
  return pieces;
}
