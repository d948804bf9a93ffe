/**
 * The internal credits API other domains call inside their own transactions (billing grants
 * purchases and plan refills; social reads, generations and chat runs hold and capture).
 * Holds live in holds.ts (placed) and hold-resolutions.ts (resolved); this file issues and expires grants.
 */
import type { Knex } from 'knex';
import { badRequest } from '../core/errors.ts';
import { coveredByHolds } from './allocations.ts';
import { ensureBalanceRow, moveBalance, writeEntries, type EntryKind } from './entries.ts';

export const grantSources = ['starter', 'purchase', 'plan_cycle', 'adjustment', 'refund'] as const;
export type GrantSource = (typeof grantSources)[number];

const kindOfSource: Record<GrantSource, EntryKind> = {
  starter: 'grant',
  purchase: 'purchase',
  plan_cycle: 'plan_refill',
  adjustment: 'adjustment',
  refund: 'refund',
};

/** Lower is drawn first among grants expiring at the same time: free credits before paid ones. */
export const defaultPriority: Record<GrantSource, number> = { starter: 10, plan_cycle: 20, refund: 50, adjustment: 50, purchase: 100 };

export interface CreditGrant {
  id: string;
  organizationId: string;
  source: GrantSource;
  amount: number;
  remaining: number;
  priority: number;
  description: string;
  expiresAt: Date | null;
  expiredAt: Date | null;
  createdAt: Date;
}

export interface GrantRow {
  id: string;
  organization_id: string;
  source: GrantSource;
  amount: number;
  remaining: number;
  priority: number;
  description: string;
  expires_at: Date | null;
  expired_at: Date | null;
  created_at: Date;
}

const grantColumns = ['id', 'organization_id', 'source', 'amount', 'remaining', 'priority', 'description', 'expires_at', 'expired_at', 'created_at'];

export const toGrant = (row: GrantRow): CreditGrant => ({
  id: row.id,
  organizationId: row.organization_id,
  source: row.source,
  amount: row.amount,
  remaining: row.remaining,
  priority: row.priority,
  description: row.description,
  expiresAt: row.expires_at,
  expiredAt: row.expired_at,
  createdAt: row.created_at,
});

export interface GrantInput {
  organizationId: string;
  source: GrantSource;
  amount: number;
  description: string;
  expiresAt?: Date | null | undefined;
  /** Lower is drawn first; defaults by source (see `defaultPriority`). */
  priority?: number | undefined;
  /** Who caused it (a purchaser, an admin adjusting), kept on the ledger row. */
  userId?: string | null | undefined;
  metadata?: Record<string, unknown> | undefined;
}

/** Adds credits to an organization: a grant, its ledger row (issued → available) and the balance. */
export async function grantCredits(trx: Knex.Transaction, input: GrantInput): Promise<CreditGrant> {
  if (!Number.isSafeInteger(input.amount) || input.amount <= 0) throw badRequest('amount: must be a positive integer number of credits', ['amount']);
  if (input.expiresAt && input.expiresAt.getTime() <= Date.now()) throw badRequest('expires_at: must be in the future', ['expires_at']);
  await ensureBalanceRow(trx, input.organizationId);
  // Balance first: it is the organization's lock, taken in the same order by every writer.
  await moveBalance(trx, input.organizationId, { granted: input.amount });
  const [row] = (await trx('credit_grants')
    .insert({
      organization_id: input.organizationId,
      source: input.source,
      amount: input.amount,
      remaining: input.amount,
      priority: input.priority ?? defaultPriority[input.source],
      description: input.description,
      metadata: input.metadata ?? {},
      expires_at: input.expiresAt ?? null,
    })
    .returning(grantColumns)) as GrantRow[];
  await writeEntries(trx, [
    {
      organizationId: input.organizationId,
      kind: kindOfSource[input.source],
      amount: input.amount,
      from: 'issued',
      to: 'available',
      grantId: row!.id,
      userId: input.userId,
      description: input.description,
      metadata: input.metadata,
    },
  ]);
  return toGrant(row!);
}

/**
 * The sandbox starter grant of a new organization (CONVENTIONS §4). Called from
 * `createOrganization` inside its transaction; a unique index makes it once per organization.
 */
export async function grantStarterCredits(trx: Knex.Transaction, organizationId: string, amount: number): Promise<CreditGrant | null> {
  await ensureBalanceRow(trx, organizationId);
  if (amount <= 0) return null;
  return grantCredits(trx, { organizationId, source: 'starter', amount, description: 'Starter credits' });
}

/**
 * Expires what is left of one grant (available → expired), exactly once: the balance row is
 * locked first, then the grant is re-read and marked. The part of it that open holds cover (they
 * are covered by the front of the draw-down order, see allocations.ts) stays on the expired grant,
 * "lingering" until they resolve: captures spend it, releases let it lapse (`credit_resolve_hold`).
 * Returns the credits expired now.
 */
export async function expireGrant(trx: Knex.Transaction, grantId: string): Promise<number> {
  const found = (await trx('credit_grants').where({ id: grantId }).first('organization_id')) as { organization_id: string } | undefined;
  if (!found) return 0;
  await trx.raw('SELECT 1 FROM credit_balances WHERE organization_id = ? FOR UPDATE', [found.organization_id]);
  const { rows } = await trx.raw(
    `WITH live AS (
       SELECT g.id, ${coveredByHolds} AS covered
         FROM credit_grants g LEFT JOIN credit_balances b ON b.organization_id = g.organization_id
        WHERE g.organization_id = ? AND g.expired_at IS NULL AND g.remaining > 0
     )
     SELECT g.description, g.remaining, coalesce(live.covered, 0) AS covered
       FROM credit_grants g LEFT JOIN live ON live.id = g.id
      WHERE g.id = ? AND g.expired_at IS NULL AND g.expires_at <= now()`,
    [found.organization_id, grantId],
  );
  const grant = rows[0] as { description: string; remaining: number; covered: string | number } | undefined;
  if (!grant) return 0;
  const covered = Number(grant.covered);
  const expired = Number(grant.remaining) - covered;
  await trx('credit_grants').where({ id: grantId }).update({ remaining: covered, expired_at: trx.fn.now() });
  if (expired > 0 || covered > 0) await moveBalance(trx, found.organization_id, { expired, lingering: covered });
  await writeEntries(trx, [
    {
      organizationId: found.organization_id,
      kind: 'expiry',
      amount: expired,
      from: 'available',
      to: 'expired',
      grantId,
      description: `Expired: ${grant.description}`,
    },
  ]);
  return expired;
}

/** Expires an organization's due grants before credits are reserved, so holds never draw on them. */
export async function expireDueGrantsOf(trx: Knex.Transaction, organizationId: string): Promise<void> {
  const due = await trx('credit_grants')
    .where({ organization_id: organizationId })
    .whereNull('expired_at')
    .whereNotNull('expires_at')
    .where('expires_at', '<=', trx.fn.now())
    .orderBy('expires_at')
    .pluck('id');
  for (const id of due) await expireGrant(trx, id as string);
}

/**
 * Grants of an organization that still count (not expired), in draw-down order, each with what is
 * neither reserved, spent nor expired: the part open holds cover is not counted.
 */
export async function listLiveGrants(db: Knex, organizationId: string): Promise<CreditGrant[]> {
  const { rows } = await db.raw(
    `SELECT ${grantColumns.map((c) => (c === 'remaining' ? `g.remaining - ${coveredByHolds} AS remaining` : `g.${c}`)).join(', ')}
       FROM credit_grants g LEFT JOIN credit_balances b ON b.organization_id = g.organization_id
      WHERE g.organization_id = ? AND g.expired_at IS NULL
      ORDER BY g.expires_at ASC NULLS LAST, g.priority ASC, g.seq ASC`,
    [organizationId],
  );
  return (rows as GrantRow[]).map((row) => toGrant({ ...row, remaining: Number(row.remaining) }));
}
