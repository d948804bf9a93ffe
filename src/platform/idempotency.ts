import { createHash } from 'node:crypto';
import type { Knex } from 'knex';
import { AppError, conflict } from '../core/errors.ts';
import { inTransaction } from '../db/transaction.ts';
import { IDEMPOTENCY_KEY_TTL_SECONDS } from './maintenance/sweeps.ts';

// The Idempotency-Key store (CONVENTIONS §3): kernel, not HTTP, because money uses it — credit
// adjustments and chat-run charges record their answer in the same transaction as the ledger rows
// (withIdempotency). It lives in src/platform, beside the hourly sweep that deletes expired keys
// (./maintenance/sweeps.ts), rather than in src/db, which holds only the database's own plumbing
// (connection, migrations, transactions). The route framework (src/http/route.ts) builds an
// IdempotentRequest from the header and calls claim/complete/release around a handler.

/** One request carrying an Idempotency-Key, as the route layer resolved it (src/http/route.ts). */
export interface IdempotentRequest {
  /** Keys are per organization (path or body `organization_id`; '' when the request names none) and caller. */
  organizationId: string;
  userId: string;
  /** SHA-256 (hex) of the key: the key itself is never stored (clients put e-mail addresses in keys). */
  keyHash: string;
  /** The operationId: the same key on another operation is another request (422). */
  operation: string;
  /** SHA-256 of the operation, path parameters, query and body. */
  requestHash: string;
  oneTime: readonly string[];
  /** Marks the answer as a replay (over HTTP: the route sets `Idempotent-Replayed: true`). */
  replayed(): void;
}

/** An answer not recorded after this long belongs to a request that was interrupted (no request runs this long). */
const LEASE_SECONDS = 15 * 60;

export const hashOfKey = (key: string) => createHash('sha256').update(key, 'utf8').digest('hex');

export function requestHash(operation: string, request: unknown): string {
  return createHash('sha256')
    .update(JSON.stringify([operation, canonical(request)]))
    .digest('hex');
}

/** Key order must not make two equal bodies look different. */
function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value as Record<string, unknown>)
        .filter(([, v]) => v !== undefined)
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
        .map(([k, v]) => [k, canonical(v)]),
    );
  }
  return value;
}

interface StoredKey {
  request_hash: string;
  response_status: number | null;
  response_body: unknown;
  interrupted: boolean;
}

const keyOf = (request: IdempotentRequest) => ({ organization_id: request.organizationId, user_id: request.userId, key_hash: request.keyHash });

/** What a stored key means for a new request with it: its answer replayed, or why it cannot run. */
function answerFromStored(request: IdempotentRequest, stored: StoredKey): { status: number; body: unknown } {
  if (stored.request_hash !== request.requestHash) {
    const message = 'Idempotency-Key: this key was already used with a different request; use a new key for a new request';
    throw new AppError('idempotency_key_reused', message, [{ path: ['Idempotency-Key'], message }]);
  }
  if (stored.response_status === null) {
    if (stored.interrupted)
      throw conflict(
        'Idempotency-Key: the request with this key was interrupted before its answer was recorded, so whether it took effect is unknown; check, then use a new key',
        ['Idempotency-Key'],
      );
    throw conflict('Idempotency-Key: a request with this key is still in progress; retry when it has finished', ['Idempotency-Key']);
  }
  request.replayed();
  return { status: stored.response_status, body: stored.response_body };
}

async function storedKey(db: Knex | Knex.Transaction, request: IdempotentRequest): Promise<StoredKey | undefined> {
  return (await db('idempotency_keys')
    .where(keyOf(request))
    .first('request_hash', 'response_status', 'response_body', db.raw('coalesce(locked_until < now(), false) AS interrupted'))) as StoredKey | undefined;
}

/** A key older than the retention counts as new even before the hourly job deletes it. */
async function forgetExpired(db: Knex | Knex.Transaction, request: IdempotentRequest): Promise<void> {
  await db('idempotency_keys')
    .where(keyOf(request))
    .where('created_at', '<', db.raw('now() - make_interval(secs => ?)', [IDEMPOTENCY_KEY_TTL_SECONDS]))
    .delete();
}

const withoutOneTime = (body: unknown, oneTime: readonly string[]) =>
  oneTime.length > 0 && body && typeof body === 'object' && !Array.isArray(body)
    ? Object.fromEntries(Object.entries(body as Record<string, unknown>).filter(([field]) => !oneTime.includes(field)))
    : body;

/**
 * Record mode, first step: the key is written as in progress and committed before the request
 * runs. Returns the stored answer to replay instead, or throws 422 (another request) / 409 (in
 * progress or interrupted).
 */
export async function claimKey(db: Knex, request: IdempotentRequest): Promise<{ status: number; body: unknown } | undefined> {
  await forgetExpired(db, request);
  const inserted = await db('idempotency_keys')
    .insert({
      ...keyOf(request),
      operation: request.operation,
      request_hash: request.requestHash,
      response_status: null,
      locked_until: db.raw('now() + make_interval(secs => ?)', [LEASE_SECONDS]),
    })
    .onConflict(['organization_id', 'user_id', 'key_hash'])
    .ignore()
    .returning('key_hash');
  if (inserted.length > 0) return undefined;
  const stored = await storedKey(db, request);
  // Deleted between the insert and the read (released by its failed request): the caller retries.
  if (!stored) throw conflict('Idempotency-Key: a request with this key has just finished; retry', ['Idempotency-Key']);
  return answerFromStored(request, stored);
}

/** Record mode, last step: the answer is stored (its one-time fields left out) for replays. */
export async function completeKey(db: Knex, request: IdempotentRequest, status: number, body: unknown): Promise<void> {
  await db('idempotency_keys')
    .where(keyOf(request))
    .whereNull('response_status')
    .update({ response_status: status, response_body: JSON.stringify(withoutOneTime(body ?? null, request.oneTime)), locked_until: null });
}

/**
 * Record mode, on an error answer: the key is released so a retry runs afresh. Every operation
 * that records keys changes nothing when it answers an error (its transaction rolls back; a
 * metered read that fails or times out bills nothing).
 */
export async function releaseKey(db: Knex, request: IdempotentRequest): Promise<void> {
  await db('idempotency_keys').where(keyOf(request)).whereNull('response_status').delete();
}

/**
 * Transaction mode: runs `act` in one transaction, exactly once per Idempotency-Key: the answer is
 * stored in the same transaction as the change, so a crash leaves either both or neither. A
 * transaction-scoped advisory lock marks the key in flight; a concurrent request with it gets 409
 * at once. A replay returns the stored answer (the route marks it replayed).
 */
export async function withIdempotency<T>(
  db: Knex,
  request: IdempotentRequest | undefined,
  act: (trx: Knex.Transaction) => Promise<T>,
  status = 200,
): Promise<T> {
  if (request === undefined) return inTransaction(db, act);
  return inTransaction(db, async (trx) => {
    const { rows } = await trx.raw('SELECT pg_try_advisory_xact_lock(hashtextextended(?, 1)) AS free', [
      `idempotency:${request.organizationId}:${request.userId}:${request.keyHash}`,
    ]);
    if (!rows[0].free) throw conflict('Idempotency-Key: a request with this key is still in progress; retry when it has finished', ['Idempotency-Key']);
    await forgetExpired(trx, request);
    const stored = await storedKey(trx, request);
    if (stored) return answerFromStored(request, stored).body as T;
    const response = await act(trx);
    const inserted = await trx('idempotency_keys')
      .insert({
        ...keyOf(request),
        operation: request.operation,
        request_hash: request.requestHash,
        response_status: status,
        response_body: JSON.stringify(withoutOneTime(response ?? null, request.oneTime)),
      })
      .onConflict(['organization_id', 'user_id', 'key_hash'])
      .ignore()
      .returning('key_hash');
    // Another operation recorded the key meanwhile: this request rolls back.
    if (inserted.length === 0) throw conflict('Idempotency-Key: a request with this key is still in progress; retry when it has finished', ['Idempotency-Key']);
    return response;
  });
}
