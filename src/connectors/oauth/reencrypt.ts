// Key rotation for the OAuth tables (the `connectors:reencrypt` command, after the credentials):
// every sealed value of a row not yet under the key ring's first key is opened and sealed again
// under it, a batch of rows per short transaction, rows locked while they change. Idempotent.
import type { Knex } from 'knex';
import { inTransaction } from '../../db/transaction.ts';
import type { Keyring } from '../secrets.ts';
import { seal, unseal } from './sealed.ts';

type Row = Record<string, unknown> & { key_id: string };

interface SealedTable {
  table: string;
  key: string[];
  /** Each sealed column and what it is bound to. */
  columns: Record<string, (row: Row) => string>;
}

const owner = (row: Row) => `${row.connector_id}:${row.user_id ?? 'organization'}`;
const tables: SealedTable[] = [
  {
    table: 'connector_oauth_connections',
    key: ['id'],
    columns: { access_token: (row) => `connection:${owner(row)}:access`, refresh_token: (row) => `connection:${owner(row)}:refresh` },
  },
  { table: 'connector_oauth_authorizations', key: ['id'], columns: { code_verifier: (row) => `authorization:${row.id}` } },
  { table: 'connector_oauth_clients', key: ['connector_id'], columns: { client_secret: (row) => `client:${row.connector_id}:${row.client_id}` } },
];

export async function reencryptOAuthSecrets(db: Knex, keyring: Keyring, options: { batchSize?: number } = {}): Promise<{ reencrypted: number }> {
  const batchSize = options.batchSize ?? 200;
  let reencrypted = 0;
  for (const { table, key, columns } of tables) {
    for (;;) {
      const done = await inTransaction(db, async (trx) => {
        const rows = (await trx(table).whereNotNull('key_id').whereNot({ key_id: keyring.current.id }).orderBy(key).limit(batchSize).forUpdate()) as Row[];
        for (const row of rows) {
          const values: Record<string, Buffer | string | null> = { key_id: keyring.current.id };
          for (const [column, boundTo] of Object.entries(columns)) {
            const sealed = row[column] as Buffer | null;
            values[column] = sealed ? seal(keyring, unseal(keyring, sealed, row.key_id, boundTo(row)), boundTo(row)) : null;
          }
          await trx(table)
            .where(Object.fromEntries(key.map((k) => [k, row[k]])))
            .update(values);
        }
        return rows.length;
      });
      reencrypted += done;
      if (done < batchSize) break;
    }
  }
  return { reencrypted };
}
