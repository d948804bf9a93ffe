import { z } from '../core/zod.ts';

// The HTTP face of Idempotency-Key: the header an operation documents and reads, and how a route
// honours it. The store itself (claim, complete, release, withIdempotency, key hashing) is the
// kernel's, src/platform/idempotency.ts: money (credits) uses it inside its own transactions and
// must not depend on the HTTP layer. Reading the header and setting `Idempotent-Replayed` happen
// in ./route.ts (idempotentRequest).

/** The `headers` schema of an operation that honours Idempotency-Key (Koa lowercases header names). */
export const idempotencyHeaders = z.object({
  'idempotency-key': z
    .string()
    .min(1)
    .max(255)
    // HTTP drops white space around a header value: the document says a key has none.
    .regex(/^\S(?:.*\S)?$/, 'must not begin or end with white space')
    .optional()
    .openapi({
      description:
        'Makes a retry safe, per caller (and organization): the same key with the same request replays the first answer — the same status and body, ' +
        'with `Idempotent-Replayed: true` — and nothing runs twice; with another request it is a 422 `idempotency_key_reused`; while the first request ' +
        'is still running it is a 409. A request answered with an error (4xx or 5xx) charged and kept nothing: its key is released and a retry runs afresh. ' +
        'Keys are remembered for 24 hours, after which a key counts as new; only their SHA-256 is stored. ' +
        'Another member sending the same key makes a request of their own: keys never replay someone else’s answer.',
      example: '8e0f2b1c-run-42-begin',
    }),
});

/** How a route honours Idempotency-Key (`Route.idempotent`). */
export interface IdempotentOptions {
  /**
   * `record` (the default): the key is recorded as in progress before the handler runs (committed,
   * so a concurrent retry sees it even while the answer waits for a job) and completed with the
   * answer after. `transaction`: the handler passes `input.idempotency` to `withIdempotency`,
   * which records the answer in the same transaction as the change (exactly once even if the
   * process dies between the two).
   */
  mode?: 'record' | 'transaction';
  /** Top-level answer fields that are one-time secrets: never stored, left out of a replayed answer. */
  oneTime?: readonly string[];
}
