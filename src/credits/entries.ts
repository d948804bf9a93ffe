import type { Knex } from 'knex';

/** Kinds of movement, in the product's words (transactions list `kind`). */
export const entryKinds = ['grant', 'purchase', 'plan_refill', 'hold', 'capture', 'release', 'expiry', 'refund', 'adjustment'] as const;
export type EntryKind = (typeof entryKinds)[number];

/**
 * The accounts of an organization. Credits are `issued` into `available`, reserved into `held`,
 * captured into `spent`, or lost to `expired`; a negative adjustment returns them to `issued`. Every entry moves a positive amount between two
 * of them, so the accounts always sum to zero (double entry).
 */
export type Account = 'issued' | 'available' | 'held' | 'spent' | 'expired';

export interface EntryInput {
  organizationId: string;
  kind: EntryKind;
  amount: number;
  from: Account;
  to: Account;
  description: string;
  grantId?: string | null | undefined;
  holdId?: string | null | undefined;
  captureId?: string | null | undefined;
  userId?: string | null | undefined;
  conversationId?: string | null | undefined;
  messageId?: string | null | undefined;
  toolCallId?: string | null | undefined;
  metadata?: Record<string, unknown> | undefined;
}

/** Appends ledger rows (immutable: a trigger rejects UPDATE and DELETE) and returns their ids. Zero amounts write nothing. */
export async function writeEntries(trx: Knex.Transaction, entries: readonly EntryInput[]): Promise<string[]> {
  const rows = entries
    .filter((entry) => entry.amount > 0)
    .map((entry) => ({
      organization_id: entry.organizationId,
      kind: entry.kind,
      amount: entry.amount,
      from_account: entry.from,
      to_account: entry.to,
      grant_id: entry.grantId ?? null,
      hold_id: entry.holdId ?? null,
      capture_id: entry.captureId ?? null,
      user_id: entry.userId ?? null,
      conversation_id: entry.conversationId ?? null,
      message_id: entry.messageId ?? null,
      tool_call_id: entry.toolCallId ?? null,
      description: entry.description,
      metadata: entry.metadata ?? {},
    }));
  if (!rows.length) return [];
  return ((await trx('credit_ledger_entries').insert(rows).returning('id')) as { id: string }[]).map((row) => row.id);
}

export interface BalanceRow {
  organization_id: string;
  granted: number;
  captured: number;
  held: number;
  expired: number;
}

export const availableOf = (row: Pick<BalanceRow, 'granted' | 'captured' | 'held' | 'expired'>) => row.granted - row.captured - row.held - row.expired;

/** Every organization that ever had credits has one balance row; it is the per-organization lock. */
export async function ensureBalanceRow(trx: Knex.Transaction, organizationId: string): Promise<void> {
  await trx.raw('INSERT INTO credit_balances (organization_id) VALUES (?) ON CONFLICT DO NOTHING', [organizationId]);
}

/**
 * Adds the deltas to the balance row and locks it until commit. Every writer of grants and holds
 * goes through here (or `reserveAvailable`) first, so the row serialises an organization's ledger.
 * The CHECK constraint turns any over-draw into an error rather than a negative balance.
 */
export async function moveBalance(
  trx: Knex.Transaction,
  organizationId: string,
  delta: Partial<Record<'granted' | 'captured' | 'held' | 'expired' | 'lingering', number>>,
): Promise<BalanceRow> {
  const { rows } = await trx.raw(
    `UPDATE credit_balances
        SET granted = granted + ?, captured = captured + ?, held = held + ?, expired = expired + ?, lingering = lingering + ?, updated_at = now()
      WHERE organization_id = ?
      RETURNING organization_id, granted, captured, held, expired`,
    [delta.granted ?? 0, delta.captured ?? 0, delta.held ?? 0, delta.expired ?? 0, delta.lingering ?? 0, organizationId],
  );
  if (!rows[0]) throw new Error(`no credit balance row for organization ${organizationId}`);
  return rows[0] as BalanceRow;
}

/**
 * The conditional update behind a negative adjustment: takes `amount` back out of `granted` only if
 * that many credits are available at the moment the row lock is taken; null when they are not.
 */
export async function withdrawAvailable(trx: Knex.Transaction, organizationId: string, amount: number): Promise<BalanceRow | null> {
  const { rows } = await trx.raw(
    `UPDATE credit_balances SET granted = granted - ?, updated_at = now()
      WHERE organization_id = ? AND granted - captured - held - expired >= ?
      RETURNING organization_id, granted, captured, held, expired`,
    [amount, organizationId, amount],
  );
  return (rows[0] as BalanceRow | undefined) ?? null;
}

/** The balances of several organizations in one read (an organization without a row has none). */
export async function readBalances(db: Knex, organizationIds: readonly string[]): Promise<Map<string, BalanceRow>> {
  if (organizationIds.length === 0) return new Map();
  const rows = (await db('credit_balances')
    .whereIn('organization_id', [...organizationIds])
    .select('organization_id', 'granted', 'captured', 'held', 'expired')) as BalanceRow[];
  return new Map(rows.map((row) => [row.organization_id, row]));
}

export async function readBalance(db: Knex, organizationId: string): Promise<BalanceRow> {
  const row = (await db('credit_balances').where({ organization_id: organizationId }).first('organization_id', 'granted', 'captured', 'held', 'expired')) as
    | BalanceRow
    | undefined;
  return row ?? { organization_id: organizationId, granted: 0, captured: 0, held: 0, expired: 0 };
}
