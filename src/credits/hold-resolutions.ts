/**
 * How a credit hold resolves: captures of what the work used (partial, or final with the rest
 * released), a chat run's settle, a release, the expiry of an overdue hold, and a final capture
 * decided in the settling transaction and posted after its commit (pending on the hold). Each hold
 * resolves exactly once; a replay of the same resolution returns the stored result and writes
 * nothing, any other second resolution is a 409. Holds are placed by ./holds.ts. Lock order: hold
 * row → balance row → grants. An autocommitted capture goes in its organization's batch (./batches.ts).
 */
import type { Knex } from 'knex';
import { badRequest, conflict, notFound } from '../core/errors.ts';
import { isTransaction } from '../db/transaction.ts';
import { type CaptureItem, captureBatched } from './batches.ts';
import {
  type CaptureAnswer,
  type CreditCapture,
  type CreditHold,
  captureFromJson,
  type HoldRow,
  holdColumns,
  holdFromJson,
  toCapture,
  toHold,
} from './hold-model.ts';
import type { Resolution } from './holds.ts';

/**
 * Which hold: its id (with its organization when the caller has it, e.g. the hold `placeHold`
 * returned: an autocommitted capture then batches with its organization's), or a run's hold found
 * in the same statement that captures, settles or releases it (no round trip to look it up first):
 * the hold of `runId` in the organization, with `reason` (null: any), placed by `userId` (null: by
 * anyone, e.g. for a caller who manages credits). Not found, it is a 404 for `what`.
 */
export type HoldRef =
  | string
  | Pick<CreditHold, 'id' | 'organizationId'>
  | { organizationId: string; runId: string; reason: string | null; userId: string | null; what: string };

/** SQL for the id of the hold `ref` names (`credit_hold_of_run` for a run's), and its bindings. */
function holdIdOf(ref: HoldRef): [string, (string | null)[]] {
  if (typeof ref === 'string') return ['?::uuid', [ref]];
  if ('id' in ref) return ['?::uuid', [ref.id]];
  return ['credit_hold_of_run(?, ?, ?, ?)', [ref.organizationId, ref.runId, ref.reason, ref.userId]];
}

const holdNotFound = (ref: HoldRef) => notFound(typeof ref === 'string' || 'id' in ref ? 'credit hold' : ref.what);

export interface CaptureOptions {
  /** Replay key: a capture repeated with the same key returns the first result. */
  captureKey?: string | undefined;
  toolCallId?: string | null | undefined;
  description?: string | undefined;
  /** Kept on the capture's ledger rows, e.g. `{ model }` for usage reports by model. */
  metadata?: Record<string, unknown> | undefined;
}

/** Records part of a hold as spent; the hold stays open for more captures until settled. */
export async function captureFromHold(
  db: Knex,
  holdId: HoldRef,
  amount: number,
  options: CaptureOptions = {},
): Promise<Resolution & { capture: CreditCapture }> {
  return capture(db, holdId, amount, options.captureKey ?? null, options, false);
}

/** Final capture: `amount` is spent, the rest of the hold is released, the hold is resolved. A replay returns the same hold. */
export async function captureHold(db: Knex, hold: HoldRef, amount: number, options: CaptureOptions = {}): Promise<CreditHold> {
  return (await capture(db, hold, amount, options.captureKey ?? 'final', options, true)).hold;
}

/** One statement (`credit_capture`), in the caller's transaction or alone. */
async function capture(
  db: Knex,
  ref: HoldRef,
  amount: number,
  key: string | null,
  options: CaptureOptions,
  final: boolean,
): Promise<Resolution & { capture: CreditCapture }> {
  if (!Number.isSafeInteger(amount) || amount < 0) throw badRequest('amount: must be a non-negative integer number of credits', ['amount']);
  const row = isTransaction(db)
    ? await captureAlone(db, ref, amount, key, options, final)
    : await captureBatched(db, captureItem(ref, amount, key, options, final));
  const hold = row.hold && holdFromJson(row.hold);
  switch (row.outcome) {
    case 'captured':
      return { hold: hold!, capture: toCapture(captureFromJson(row.capture!)), replayed: false };
    case 'replayed':
      // A final capture replays only onto the hold it resolved itself.
      if (final && hold!.status !== 'held' && hold!.resolution !== 'capture') throw alreadyResolved(hold!);
      return { hold: hold!, capture: toCapture(captureFromJson(row.capture!)), replayed: true };
    case 'capture_conflict':
      // A second, different final capture: the hold already resolved (the usual way to say it).
      if (final && hold!.status !== 'held') throw alreadyResolved(hold!);
      throw conflict(`capture_id: "${key}" already captured ${row.capture!.amount} credits`, ['capture_id']);
    case 'not_found':
      throw holdNotFound(ref);
    case 'resolved':
      throw alreadyResolved(hold!);
    case 'expired':
      throw conflict(`hold: the hold expired at ${hold!.expiresAt.toISOString()}`, ['hold']);
    case 'exceeds':
      throw conflict(`amount: ${amount} credits exceed what is left on the hold (${hold!.amount - hold!.captured - hold!.released})`, ['amount']);
    default:
      throw new Error(`credit_capture answered ${row.outcome}`);
  }
}

async function captureAlone(
  trx: Knex.Transaction,
  ref: HoldRef,
  amount: number,
  key: string | null,
  options: CaptureOptions,
  final: boolean,
): Promise<CaptureAnswer> {
  const [target, targetBindings] = holdIdOf(ref);
  const { rows } = await trx.raw(`SELECT * FROM credit_capture(${target}, ?, ?, ?, ?, ?::jsonb, ?)`, [
    ...targetBindings,
    amount,
    key,
    options.toolCallId ?? null,
    options.description ?? null,
    JSON.stringify(options.metadata ?? {}),
    final,
  ]);
  return rows[0] as CaptureAnswer;
}

/** The same capture as an item of `credit_capture_batch`. */
const captureItem = (ref: HoldRef, amount: number, key: string | null, options: CaptureOptions, final: boolean): CaptureItem => [
  ...(typeof ref === 'string'
    ? ([ref, null, null, null, null] as const)
    : 'id' in ref
      ? ([ref.id, ref.organizationId, null, null, null] as const)
      : ([null, ref.organizationId, ref.runId, ref.reason, ref.userId] as const)),
  amount,
  key,
  options.toolCallId ?? null,
  options.description ?? null,
  options.metadata ?? {},
  final,
];

const alreadyResolved = (hold: Pick<CreditHold, 'status'>) => conflict(`hold: the hold is already ${hold.status}; it resolves only once`, ['hold']);

interface ResolveStep {
  /** Credits spent now (0: none). */
  capture: number;
  /** The capture row the ledger entries point at. */
  captureId?: string | undefined;
  toolCallId?: string | null | undefined;
  captureDescription?: string | undefined;
  metadata?: Record<string, unknown> | undefined;
  /** Omitted: the hold stays open (a partial capture). Else it resolves and the rest is released. */
  final?: { status: CreditHold['status']; resolution: NonNullable<CreditHold['resolution']>; description: string; metadata?: Record<string, unknown> };
}

/** The locked part of a capture or resolution: one call (see the migration). The hold is locked and checked by the caller (settle, release, expiry). */
async function resolveStep(trx: Knex.Transaction, row: HoldRow, step: ResolveStep): Promise<HoldRow> {
  const { rows } = await trx.raw('SELECT * FROM credit_resolve_hold(?, ?, ?, ?, ?, ?::jsonb, ?, ?, ?, ?::jsonb)', [
    row.id,
    step.capture,
    step.captureId ?? null,
    step.toolCallId ?? null,
    step.captureDescription ?? `Used for ${row.reason}`,
    JSON.stringify(step.metadata ?? {}),
    step.final?.status ?? null,
    step.final?.resolution ?? null,
    step.final?.description ?? null,
    JSON.stringify(step.final?.metadata ?? {}),
  ]);
  return rows[0] as HoldRow;
}

async function lockHold(trx: Knex.Transaction, ref: HoldRef): Promise<HoldRow & { overdue: boolean; pending: boolean }> {
  const [id, bindings] = holdIdOf(ref);
  const row = (await trx('credit_holds')
    .whereRaw(`id = ${id}`, bindings)
    .forUpdate()
    .first([...holdColumns, trx.raw('expires_at <= now() AS overdue'), trx.raw('pending_capture IS NOT NULL AS pending')])) as
    | (HoldRow & { overdue: boolean; pending: boolean })
    | undefined;
  if (!row) throw holdNotFound(ref);
  return row;
}

/** Closes a chat run: captures so far are final, the rest is released. Replays return the same hold. */
export async function settleHold(trx: Knex.Transaction, hold: HoldRef): Promise<Resolution> {
  const row = await lockHold(trx, hold);
  if (row.status !== 'held') {
    if (row.resolution === 'settle' || row.resolution === 'capture') return { hold: toHold(row), replayed: true };
    throw alreadyResolved(row);
  }
  if (row.overdue) throw conflict(`hold: the hold expired at ${row.expires_at.toISOString()}`, ['hold']);
  const status = row.captured > 0 ? 'captured' : 'released';
  return {
    hold: toHold(await resolveStep(trx, row, { capture: 0, final: { status, resolution: 'settle', description: 'Released at settle: not used' } })),
    replayed: false,
  };
}

/** Gives the whole (uncaptured part of the) hold back. */
export async function releaseHold(trx: Knex.Transaction, hold: HoldRef, options: { description?: string } = {}): Promise<Resolution> {
  const row = await lockHold(trx, hold);
  if (row.status !== 'held') {
    if (row.resolution === 'release') return { hold: toHold(row), replayed: true };
    throw alreadyResolved(row);
  }
  const final = { status: 'released', resolution: 'release', description: options.description ?? 'Released' } as const;
  return { hold: toHold(await resolveStep(trx, row, { capture: 0, final })), replayed: false };
}

/** The expiry job's step: an overdue open hold releases what it did not capture. False if nothing to do. */
export async function expireHold(trx: Knex.Transaction, holdId: string): Promise<boolean> {
  const row = await lockHold(trx, holdId).catch(() => null);
  // A capture pending on it (its work succeeded) is posted, never released: `postPendingCapture`.
  if (row?.status !== 'held' || !row.overdue || row.pending) return false;
  const final = { status: 'expired', resolution: 'expiry', description: 'Released: hold expired unused', metadata: { reason: 'hold_expired' } } as const;
  await resolveStep(trx, row, { capture: 0, final });
  return true;
}

/**
 * SQL expressions over the row of the statement that settles the work a hold paid for (e.g. a
 * metered call's `UPDATE … RETURNING`): which hold (its organization, run id and reason), the final
 * capture's credits and tool call, its ledger description and metadata.
 */
export interface PendingCaptureSql {
  organizationId: string;
  runId: string;
  reason: string;
  amount: string;
  toolCallId: string;
  description: string;
  metadata: string;
}

/**
 * A column of that statement recording the hold's final capture as decided but not yet posted
 * (`credit_holds.pending_capture`, migrations/20261127202000_metered_read_statements.ts): it locks
 * the hold's row only, never the organization's balance. Named `pending_hold_id`: the hold's id, or
 * null when the hold is not open, ran out of time, already has one pending or has too little left
 * (nothing written; capture the usual way to get the precise refusal). Post it after the commit
 * with `postPendingCapture`; a crash before that loses nothing (see there).
 */
export const pendingCaptureColumn = (db: Knex, sql: PendingCaptureSql) =>
  db.raw(
    `credit_pend_capture(${sql.organizationId}, ${sql.runId}, ${sql.reason}, ${sql.amount}, ${sql.toolCallId}, ${sql.description}, ${sql.metadata}) AS pending_hold_id`,
  );

/**
 * Posts the hold's pending final capture, if it still has one: one autocommitted statement, so the
 * organization's balance row is locked for that statement only. Idempotent — whoever comes first
 * posts it (the worker right after its commit; the waiting request when it gives up; the hold
 * expiry job, which never releases a hold with a capture pending) and the rest find it resolved.
 * `alongside`: a column sent with it, e.g. the NOTIFY that tells a waiting request the answer and
 * its charge are both committed. Returns whether this call posted it.
 */
export async function postPendingCapture(db: Knex, holdId: string, alongside?: Knex.Raw): Promise<boolean> {
  const { rows } = await db.raw(`SELECT p.outcome${alongside ? ', ?' : ''} FROM credit_post_capture(?) p`, alongside ? [alongside, holdId] : [holdId]);
  return (rows[0] as { outcome: string }).outcome === 'captured';
}

/** Posts the pending capture of the hold of `runId` in the organization, if any (see `postPendingCapture`). */
export async function postPendingCaptureOfRun(db: Knex, organizationId: string, runId: string): Promise<boolean> {
  const id = await db('credit_holds').where({ organization_id: organizationId, run_id: runId, status: 'held' }).whereNotNull('pending_capture').first('id');
  return id ? postPendingCapture(db, id.id as string) : false;
}
