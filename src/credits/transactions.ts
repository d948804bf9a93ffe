import type { z } from '../core/zod.ts';
import { paginate } from '../core/pagination.ts';
import type { Deps } from '../platform/deps.ts';
import type { Account, EntryKind } from './entries.ts';
import type { transactionSchema, transactionsQuery, transactionsPage } from './schema.ts';

export interface EntryRow {
  id: string;
  kind: EntryKind;
  amount: number;
  from_account: Account;
  to_account: Account;
  grant_id: string | null;
  hold_id: string | null;
  run_id: string | null;
  user_id: string | null;
  conversation_id: string | null;
  message_id: string | null;
  tool_call_id: string | null;
  description: string;
  metadata: Record<string, unknown>;
  created_at: Date;
}

/** Columns of `presentEntry`, read from `credit_ledger_entries as e` left-joined with `credit_holds as h`. */
export const entryColumns = [
  'e.id',
  'e.kind',
  'e.amount',
  'e.from_account',
  'e.to_account',
  'e.grant_id',
  'e.hold_id',
  'h.run_id',
  'e.user_id',
  'e.conversation_id',
  'e.message_id',
  'e.tool_call_id',
  'e.description',
  'e.metadata',
  'e.created_at',
];

/** The ledger of an organization, newest first, keyset-paged on the ledger's own sequence. */
export async function listTransactions(
  deps: Pick<Deps, 'db'>,
  organizationId: string,
  query: z.output<typeof transactionsQuery>,
): Promise<z.input<typeof transactionsPage>> {
  const q = deps
    .db('credit_ledger_entries as e')
    .leftJoin('credit_holds as h', 'h.id', 'e.hold_id')
    .where('e.organization_id', organizationId)
    .select(entryColumns);
  if (query.kind) q.where('e.kind', query.kind);
  if (query.user_id) q.where('e.user_id', query.user_id);
  if (query.conversation_id) q.where('e.conversation_id', query.conversation_id);
  if (query.tool_call_id) q.where('e.tool_call_id', query.tool_call_id);
  if (query.run_id) q.where('h.run_id', query.run_id);
  if (query.since) q.where('e.created_at', '>=', query.since);
  if (query.until) q.where('e.created_at', '<', query.until);
  const page = await paginate<EntryRow & Record<string, unknown>>(q, [{ column: 'e.seq', direction: 'desc', type: 'number' }], query);
  return { items: page.items.map(presentEntry), next_cursor: page.next_cursor };
}

const sign = (row: EntryRow, account: Account) => (row.to_account === account ? row.amount : row.from_account === account ? -row.amount : 0);

export function presentEntry(row: EntryRow): z.input<typeof transactionSchema> {
  return {
    id: row.id,
    kind: row.kind,
    amount: row.amount,
    from_account: row.from_account,
    to_account: row.to_account,
    // balance = available + held, so only movements in from `issued` or out to spent/expired change it.
    balance_change: sign(row, 'available') + sign(row, 'held'),
    available_change: sign(row, 'available'),
    grant_id: row.grant_id,
    hold_id: row.hold_id,
    run_id: row.run_id,
    user_id: row.user_id,
    conversation_id: row.conversation_id,
    message_id: row.message_id,
    tool_call_id: row.tool_call_id,
    description: row.description,
    metadata: row.metadata,
    created_at: row.created_at.toISOString(),
  };
}
