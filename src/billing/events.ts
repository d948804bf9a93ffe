import type { Knex } from 'knex';
import type { Db } from '../db/knex.ts';

export interface BillingEventInput {
  organizationId: string;
  /** Dotted, past tense: `subscription.plan_changed`, `credits.purchased`… */
  type: string;
  title: string;
  description: string;
  /** Money, in minor units; shown as a decimal `amount` with its `currency`. */
  amountMinor?: number;
  currency?: string;
  actorId?: string | null;
  providerEventId?: string;
  data?: Record<string, unknown>;
}

/** Appends to the billing events feed, in the transaction of the change it records. */
export async function recordBillingEvent(trx: Knex.Transaction, event: BillingEventInput): Promise<void> {
  const hasMoney = event.amountMinor !== undefined && event.currency !== undefined;
  await trx('billing_events').insert({
    organization_id: event.organizationId,
    type: event.type,
    title: event.title,
    description: event.description,
    amount: hasMoney ? (event.amountMinor! / 100).toFixed(2) : null,
    currency: hasMoney ? event.currency!.toLowerCase() : null,
    actor_id: event.actorId ?? null,
    provider_event_id: event.providerEventId ?? null,
    data: event.data ?? {},
  });
}

export interface BillingEventView {
  id: string;
  type: string;
  title: string;
  description: string;
  created_at: string;
  amount?: number;
  currency?: string;
}

/** Events of the last `days` days, newest first (ties broken by id so the order is stable). */
export async function listBillingEvents(db: Db, organizationId: string, days: number, limit: number): Promise<BillingEventView[]> {
  const rows = await db('billing_events')
    .where({ organization_id: organizationId })
    .where('created_at', '>=', db.raw(`now() - make_interval(days => ?)`, [days]))
    .orderBy([
      { column: 'created_at', order: 'desc' },
      { column: 'id', order: 'desc' },
    ])
    .limit(limit)
    .select('id', 'type', 'title', 'description', 'created_at', 'amount', 'currency');
  return rows.map((row) => ({
    id: row.id,
    type: row.type,
    title: row.title,
    description: row.description,
    created_at: (row.created_at as Date).toISOString(),
    // Optional fields (spec 2.8) are absent, not null, when the event moves no money.
    ...(row.amount !== null && { amount: Number(row.amount), currency: row.currency as string }),
  }));
}
