// `npm run migrate` and the Procfile's `release`: migrate the database, install queues, exit.
import { loadConfigOrExit } from '../config/load.ts';
import { resolveDatabase } from '../platform/database-url.ts';
import { createLogger } from '../platform/logger.ts';
import { release } from './release.ts';

const config = loadConfigOrExit();
const log = createLogger(config, 'release');
const { url, embedded } = await resolveDatabase(config, log);
try {
  await release(url, log);
} finally {
  await embedded?.stop();
}
