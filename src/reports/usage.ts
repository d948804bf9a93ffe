import type { Knex } from 'knex';

export const usageGroupings = ['day', 'member', 'kind', 'model', 'conversation', 'tool_call'] as const;
export type UsageGrouping = (typeof usageGroupings)[number];

export interface UsageRow {
  key: string;
  label: string | null;
  credits: number;
  captures: number;
}

// What each grouping groups captures by: the UTC day, the member, the hold's reason (a metered read's
// operation name, `chat_run`…), the model stamped on the entry, the conversation and the tool call it is attributed to.
const groupKey: Record<UsageGrouping, string> = {
  day: `to_char(e.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD')`,
  member: `coalesce(e.user_id, 'unattributed')`,
  kind: `coalesce(h.reason, 'other')`,
  model: `coalesce(nullif(e.metadata->>'model', ''), 'unspecified')`,
  conversation: `coalesce(e.conversation_id, 'unattributed')`,
  tool_call: `coalesce(e.tool_call_id, 'unattributed')`,
};

/**
 * Credits spent (ledger `capture` entries, held → spent) in [from, to), summed per group.
 * Releases and refunds are not usage; a capture is counted when it was recorded.
 */
export async function usageReport(
  db: Knex,
  input: { organizationId: string; from: Date; to: Date; groupBy: UsageGrouping; kinds?: string[] | undefined },
): Promise<UsageRow[]> {
  const key = groupKey[input.groupBy];
  const rows = await db('credit_ledger_entries as e')
    .leftJoin('credit_holds as h', 'h.id', 'e.hold_id')
    .leftJoin('users as u', 'u.id', 'e.user_id')
    .where('e.organization_id', input.organizationId)
    .where('e.kind', 'capture')
    .where('e.created_at', '>=', input.from)
    .where('e.created_at', '<', input.to)
    .modify((query) => {
      if (input.kinds?.length) query.whereRaw(`coalesce(h.reason, 'other') = ANY(?)`, [input.kinds]);
    })
    .groupByRaw(key)
    .orderByRaw(input.groupBy === 'day' ? `${key} ASC` : `sum(e.amount) DESC, ${key} ASC`)
    .select(
      db.raw(`${key} AS key`),
      db.raw('sum(e.amount)::bigint AS credits'),
      db.raw('count(DISTINCT e.capture_id)::bigint AS captures'),
      db.raw(input.groupBy === 'member' ? 'max(coalesce(u.name, u.email)) AS label' : 'NULL AS label'),
    );
  return (rows as { key: string; label: string | null; credits: string; captures: string }[]).map((row) => ({
    key: row.key,
    label: row.label ?? null,
    credits: Number(row.credits),
    captures: Number(row.captures),
  }));
}
