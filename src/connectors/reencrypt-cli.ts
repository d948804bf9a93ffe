// `npm run connectors:reencrypt`: after putting a new key first in CONNECTOR_SECRET_KEYS (the old
// ones still listed after it), re-encrypt every connector credential and OAuth secret under it; then the old keys
// may be dropped. Safe to run again (rows already under the first key are left alone).
import { loadConfigOrExit } from '../config/load.ts';
import { createDb } from '../db/knex.ts';
import { resolveDatabase } from '../platform/database-url.ts';
import { answerUsage } from '../platform/cli-usage.ts';
import { createLogger } from '../platform/logger.ts';
import { reencryptOAuthSecrets } from './oauth/reencrypt.ts';
import { reencryptCredentials } from './reencrypt.ts';
import { resolveKeyring } from './secrets.ts';

answerUsage(`usage: npm run connectors:reencrypt
  Re-encrypts every stored connector credential under the first key of CONNECTOR_SECRET_KEYS.
  Put the new key first (the old ones after it), run this, then drop the old keys. Safe to run again.`);
const config = loadConfigOrExit();
const log = createLogger(config, 'connectors-reencrypt');
const keyring = await resolveKeyring(config);
if (!keyring) {
  process.stderr.write('CONNECTOR_SECRET_KEYS is not set: there is no key to re-encrypt under\n');
  process.exit(1);
}
const { url, embedded } = await resolveDatabase(config, log);
const db = createDb(url, { max: 2, applicationName: 'connectors-reencrypt' });
try {
  const { reencrypted } = await reencryptCredentials(db, keyring);
  const oauth = await reencryptOAuthSecrets(db, keyring);
  log.info({ reencrypted, oauth_rows_reencrypted: oauth.reencrypted, key_id: keyring.current.id }, 'connector credentials re-encrypted');
  process.stdout.write(
    `re-encrypted ${reencrypted} connector credential(s) and ${oauth.reencrypted} OAuth row(s) (tokens, verifiers, client secrets) under key "${keyring.current.id}"\n`,
  );
} finally {
  await db.destroy();
  await embedded?.stop();
}
