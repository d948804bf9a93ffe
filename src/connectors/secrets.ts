import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { connectorSecretKeys, type Config, type ConnectorSecretKey } from '../config/schema.ts';

/** The keys credentials are sealed with: the first encrypts, every one decrypts (rotation). */
export interface Keyring {
  current: ConnectorSecretKey;
  keys: ReadonlyMap<string, Buffer>;
}

/** A secret as stored: AES-256-GCM ciphertext, its 12-byte IV and 16-byte tag, and the id of the key. */
export interface SealedSecret {
  ciphertext: Buffer;
  iv: Buffer;
  authTag: Buffer;
  keyId: string;
}

export const keyringOf = (keys: readonly ConnectorSecretKey[]): Keyring => {
  if (!keys.length) throw new Error('a keyring needs at least one key');
  return { current: keys[0]!, keys: new Map(keys.map((k) => [k.id, k.key])) };
};

/**
 * The associated data binds a ciphertext to its row: a sealed secret copied onto another
 * connector or user does not open.
 */
const boundTo = (connectorId: string, userId: string) => Buffer.from(`connector-credential:${connectorId}:${userId}`, 'utf8');

export function sealSecret(keyring: Keyring, secret: string, owner: { connectorId: string; userId: string }): SealedSecret {
  return sealBound(keyring, secret, boundTo(owner.connectorId, owner.userId));
}

export function openSecret(keyring: Keyring, sealed: SealedSecret, owner: { connectorId: string; userId: string }): string {
  return openBound(keyring, sealed, boundTo(owner.connectorId, owner.userId));
}

/** Seals `secret` under the current key, bound to `associatedData` (the row it belongs to): a copy on another row does not open. */
export function sealBound(keyring: Keyring, secret: string, associatedData: Buffer): SealedSecret {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', keyring.current.key, iv);
  cipher.setAAD(associatedData);
  const ciphertext = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
  return { ciphertext, iv, authTag: cipher.getAuthTag(), keyId: keyring.current.id };
}

export function openBound(keyring: Keyring, sealed: SealedSecret, associatedData: Buffer): string {
  const key = keyring.keys.get(sealed.keyId);
  if (!key) throw new Error(`secret sealed with key "${sealed.keyId}", which CONNECTOR_SECRET_KEYS does not list`);
  const decipher = createDecipheriv('aes-256-gcm', key, sealed.iv);
  decipher.setAAD(associatedData);
  decipher.setAuthTag(sealed.authTag);
  return Buffer.concat([decipher.update(sealed.ciphertext), decipher.final()]).toString('utf8');
}

/** The last four characters, shown so a user can tell which secret is set; none for short secrets (it would be most of them). */
export const last4Of = (secret: string): string | null => {
  const characters = [...secret];
  return characters.length >= 12 ? characters.slice(-4).join('') : null;
};

export const GENERATED_KEY_FILE = 'connector-secret-key';

const keyrings = new Map<string, Promise<Keyring | null>>();

/**
 * The keyring of this configuration: CONNECTOR_SECRET_KEYS when set; in development and test one
 * key generated on first use and kept in DATA_DIR (like the dev JWT secret; the file holds a
 * `local:base64key` entry, ready to be listed in CONNECTOR_SECRET_KEYS); in production without the
 * variable, null (storing a credential is then refused with 503).
 */
export function resolveKeyring(config: Pick<Config, 'CONNECTOR_SECRET_KEYS' | 'DATA_DIR' | 'NODE_ENV'>): Promise<Keyring | null> {
  if (config.CONNECTOR_SECRET_KEYS?.length) return Promise.resolve(keyringOf(config.CONNECTOR_SECRET_KEYS));
  if (config.NODE_ENV === 'production') return Promise.resolve(null);
  const file = path.resolve(config.DATA_DIR, GENERATED_KEY_FILE);
  let found = keyrings.get(file);
  if (!found) {
    found = generatedKeyring(file);
    keyrings.set(file, found);
    found.catch(() => keyrings.delete(file));
  }
  return found;
}

async function generatedKeyring(file: string): Promise<Keyring> {
  if (!existsSync(file)) {
    await mkdir(path.dirname(file), { recursive: true });
    const entry = `local:${randomBytes(32).toString('base64')}`;
    await writeFile(file, entry, { mode: 0o600, flag: 'wx' }).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== 'EEXIST') throw error; // another process won the race: use its key
    });
  }
  // The file's entry is checked by the same rule as the variable.
  const parsed = connectorSecretKeys.safeParse((await readFile(file, 'utf8')).trim());
  if (!parsed.success || !parsed.data) throw new Error(`${file}: ${parsed.error?.issues[0]?.message ?? 'is empty'}`);
  return keyringOf(parsed.data);
}
