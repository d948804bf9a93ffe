import type { Knex } from 'knex';
import { openSecret, sealSecret, type Keyring } from './secrets.ts';
import { inTransaction } from '../db/transaction.ts';

interface StoredCredential {
  connector_id: string;
  user_id: string;
  ciphertext: Buffer;
  iv: Buffer;
  auth_tag: Buffer;
  key_id: string;
}

/**
 * Re-encrypts every connector credential not yet under the keyring's first key, in batches of
 * `batchSize` rows (one short transaction each, rows locked while they change). Idempotent: a row
 * already under the first key is never touched, so a second run finds nothing to do. `updated_at`
 * is kept: it tells users when they set the secret, which a rotation does not change.
 */
export async function reencryptCredentials(db: Knex, keyring: Keyring, options: { batchSize?: number } = {}): Promise<{ reencrypted: number }> {
  const batchSize = options.batchSize ?? 200;
  let reencrypted = 0;
  for (;;) {
    const done = await inTransaction(db, async (trx) => {
      const rows = (await trx('connector_credentials')
        .whereNot({ key_id: keyring.current.id })
        .orderBy(['connector_id', 'user_id'])
        .limit(batchSize)
        .forUpdate()
        .select('connector_id', 'user_id', 'ciphertext', 'iv', 'auth_tag', 'key_id')) as StoredCredential[];
      for (const row of rows) {
        const owner = { connectorId: row.connector_id, userId: row.user_id };
        const secret = openSecret(keyring, { ciphertext: row.ciphertext, iv: row.iv, authTag: row.auth_tag, keyId: row.key_id }, owner);
        const sealed = sealSecret(keyring, secret, owner);
        await trx('connector_credentials')
          .where({ connector_id: row.connector_id, user_id: row.user_id })
          .update({ ciphertext: sealed.ciphertext, iv: sealed.iv, auth_tag: sealed.authTag, key_id: sealed.keyId });
      }
      return rows.length;
    });
    reencrypted += done;
    if (done < batchSize) return { reencrypted };
  }
}
