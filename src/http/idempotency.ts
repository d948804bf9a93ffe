import { createHash } from 'node:crypto';
import type { Knex } from 'knex';
import { AppError, conflict } from '../core/errors.ts';
import { z } from '../core/zod.ts';
import { inTransaction } from '../db/transaction.ts';

/** The `headers` schema of an operation that honours Idempotency-Key (Koa lowercases header names). */
export const idempotencyHeaders = z.object({
  'idempotency-key': z
    .string()
    .min(1)
    .max(255)
    .optional()
    .openapi({
      description:
        'Makes a retry safe, per caller and organization: the same key with the same request replays the stored response and changes nothing; ' +
        'with another request it is a 422; while the first request is still running it is a 409. A request that failed stored nothing and may be retried. ' +
        'Keys are remembered for 24 hours (deleted by an hourly job after that); a key reused later counts as a new request. ' +
        'Another member sending the same key makes a request of their own: keys never replay someone else’s response.',
      example: '8e0f2b1c-run-42-begin',
    }),
});

export interface IdempotencyScope {
  /** Keys are unique per organization and caller: another member's key is another request. */
  organizationId: string;
  userId: string;
  key: string | undefined;
  /** The operation (operationId): the same key on another operation counts as another request. */
  operation: string;
  /** Everything that identifies the request: path parameters and body. */
  request: unknown;
  /** HTTP status of the successful response, kept with it. */
  status?: number;
}

/**
 * Runs `act` in one transaction, exactly once per Idempotency-Key: the stored response is written
 * in the same transaction as the change, so a crash leaves either both or neither. A transaction-
 * scoped advisory lock marks the key in flight; a concurrent request with it gets 409 at once.
 */
export async function withIdempotency<T>(db: Knex, scope: IdempotencyScope, act: (trx: Knex.Transaction) => Promise<T>): Promise<T> {
  if (scope.key === undefined) return inTransaction(db, act);
  const key = scope.key;
  const hash = requestHash(scope.operation, scope.request);
  return inTransaction(db, async (trx) => {
    const { rows } = await trx.raw('SELECT pg_try_advisory_xact_lock(hashtextextended(?, 1)) AS free', [
      `idempotency:${scope.organizationId}:${scope.userId}:${key}`,
    ]);
    if (!rows[0].free) throw conflict('Idempotency-Key: a request with this key is still in progress; retry when it has finished', ['Idempotency-Key']);
    const stored = (await trx('idempotency_keys')
      .where({ organization_id: scope.organizationId, user_id: scope.userId, key })
      .first('request_hash', 'response_body')) as { request_hash: string; response_body: T } | undefined;
    if (stored) {
      if (stored.request_hash !== hash) {
        const message = 'Idempotency-Key: this key was already used with a different request; use a new key for a new request';
        throw new AppError('validation_failed', message, [{ path: ['Idempotency-Key'], message }], { status: 422 });
      }
      return stored.response_body;
    }
    const response = await act(trx);
    await trx('idempotency_keys').insert({
      organization_id: scope.organizationId,
      user_id: scope.userId,
      key,
      operation: scope.operation,
      request_hash: hash,
      response_status: scope.status ?? 200,
      response_body: JSON.stringify(response ?? null),
    });
    return response;
  });
}

function requestHash(operation: string, request: unknown): string {
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
