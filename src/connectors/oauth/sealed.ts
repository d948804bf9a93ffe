// The OAuth tables keep each secret as one bytea (iv ‖ tag ‖ ciphertext) sealed with the connector
// key ring and bound to its row, the key's id beside it (one per row).
import { unavailable } from '../../core/errors.ts';
import type { Deps } from '../../platform/deps.ts';
import { type Keyring, openBound, resolveKeyring, sealBound } from '../secrets.ts';

export async function oauthKeyring(deps: Pick<Deps, 'config'>): Promise<Keyring> {
  const keyring = await resolveKeyring(deps.config);
  if (!keyring) throw unavailable('connector OAuth tokens cannot be stored or read: CONNECTOR_SECRET_KEYS is not configured');
  return keyring;
}

/** Seals `secret` under the current key, bound to `boundTo` (e.g. `connection:<id>:access`). */
export function seal(keyring: Keyring, secret: string, boundTo: string): Buffer {
  const sealed = sealBound(keyring, secret, Buffer.from(`connector-oauth:${boundTo}`, 'utf8'));
  return Buffer.concat([sealed.iv, sealed.authTag, sealed.ciphertext]);
}

export function unseal(keyring: Keyring, packed: Buffer, keyId: string, boundTo: string): string {
  const sealed = { iv: packed.subarray(0, 12), authTag: packed.subarray(12, 28), ciphertext: packed.subarray(28), keyId };
  return openBound(keyring, sealed, Buffer.from(`connector-oauth:${boundTo}`, 'utf8'));
}
