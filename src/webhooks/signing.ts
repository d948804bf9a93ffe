import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { openBound, resolveKeyring, sealBound, type Keyring, type SealedSecret } from '../connectors/index.ts';
import { unavailable } from '../core/errors.ts';
import type { Config } from '../config/schema.ts';

/** How long a rotated-out secret keeps signing beside the new one. */
export const SECRET_OVERLAP_HOURS = 24;

/** A Standard Webhooks secret: `whsec_` and 24 random bytes, base64. */
export const newSigningSecret = (): string => `whsec_${randomBytes(24).toString('base64')}`;

// Bound to its endpoint: a sealed secret copied onto another endpoint's row does not open.
const boundTo = (endpointId: string) => Buffer.from(`webhook-endpoint-secret:${endpointId}`, 'utf8');

/** The keyring (CONNECTOR_SECRET_KEYS, or the generated development key); 503 in production without one. */
export async function keyringFor(config: Pick<Config, 'CONNECTOR_SECRET_KEYS' | 'DATA_DIR' | 'NODE_ENV'>): Promise<Keyring> {
  const keyring = await resolveKeyring(config);
  if (!keyring) throw unavailable('webhook signing secrets cannot be stored: CONNECTOR_SECRET_KEYS is not configured');
  return keyring;
}

export interface SecretColumns {
  ciphertext: Buffer;
  iv: Buffer;
  auth_tag: Buffer;
  key_id: string;
}

export function sealSigningSecret(keyring: Keyring, endpointId: string, secret: string): SecretColumns {
  const sealed = sealBound(keyring, secret, boundTo(endpointId));
  return { ciphertext: sealed.ciphertext, iv: sealed.iv, auth_tag: sealed.authTag, key_id: sealed.keyId };
}

export function openSigningSecret(keyring: Keyring, endpointId: string, columns: SecretColumns): string {
  const sealed: SealedSecret = { ciphertext: columns.ciphertext, iv: columns.iv, authTag: columns.auth_tag, keyId: columns.key_id };
  return openBound(keyring, sealed, boundTo(endpointId));
}

/**
 * The Standard Webhooks headers of one message: `webhook-signature` carries one `v1,…` signature
 * per secret, space-separated — during a rotation the new and the previous secret both sign, so a
 * receiver holding either verifies.
 */
export function signedHeaders(secrets: readonly string[], messageId: string, at: Date, body: string): Record<string, string> {
  const signatures = secrets.map((secret) => new Webhook(secret).sign(messageId, at, body));
  return {
    'webhook-id': messageId,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': signatures.join(' '),
  };
}
