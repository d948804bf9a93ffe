import { createHmac, timingSafeEqual } from 'node:crypto';

export interface PredictionWebhook {
  /** The endpoint's signing secret: `whsec_` followed by the base64 key, as the service shows it (without the prefix, its UTF-8 bytes are the key). */
  secret: string;
  /** The `webhook-id` header. */
  id: string;
  /** The `webhook-timestamp` header: seconds since the epoch. */
  timestamp: string;
  /** The raw request body, exactly as received: parsing and re-serialising it would change the bytes signed. */
  body: string | Buffer;
  /** The `webhook-signature` header. */
  signature: string;
  /** Milliseconds since the epoch (tests pass a fixed clock). */
  now?: number;
  toleranceSeconds?: number;
}

/**
 * Verifies a prediction webhook by the Standard Webhooks scheme (standardwebhooks.com), which
 * Replicate-like services use: the signature is HMAC-SHA256, keyed by the secret, over
 * `${webhook-id}.${webhook-timestamp}.${body}`, base64-encoded; the `webhook-signature` header lists
 * one or more `v1,<signature>` separated by spaces (several while a secret is being rotated), and
 * any one matching is enough. The timestamp must be within `toleranceSeconds` (default 300) of now
 * either way, so a captured delivery cannot be replayed later; the id lets the caller drop
 * duplicates. Comparison is constant-time so the signature cannot be guessed byte by byte.
 */
export function verifyPredictionWebhook(webhook: PredictionWebhook): boolean {
  const { id, timestamp, body, signature } = webhook;
  if (!/^\d{1,12}$/.test(timestamp) || id === '') return false;
  const now = webhook.now ?? Date.now();
  if (Math.abs(now / 1000 - Number(timestamp)) > (webhook.toleranceSeconds ?? 300)) return false;
  const key = webhook.secret.startsWith('whsec_') ? Buffer.from(webhook.secret.slice(6), 'base64') : Buffer.from(webhook.secret, 'utf8');
  if (key.length === 0) return false;
  const expected = createHmac('sha256', key).update(`${id}.${timestamp}.`).update(body).digest();
  return signature
    .split(' ')
    .filter((entry) => entry.startsWith('v1,'))
    .some((entry) => {
      const given = Buffer.from(entry.slice(3), 'base64');
      // timingSafeEqual throws on different lengths; the length of an HMAC is no secret.
      return given.length === expected.length && timingSafeEqual(given, expected);
    });
}
