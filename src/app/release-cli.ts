// `npm run migrate` and the Procfile's `release`: migrate the database, install queues, exit.
import { loadConfigOrExit } from '../config/load.ts';
import { resolveDatabase } from '../platform/database-url.ts';
import { answerUsage } from '../platform/cli-usage.ts';
import { createLogger } from '../platform/logger.ts';
import { release } from './release.ts';

answerUsage(`usage: npm run migrate
  Migrates the database (DATABASE_URL, else the embedded one under DATA_DIR) and installs the job queues, then exits.
  The Procfile's release phase runs it before a deploy.`);
const config = loadConfigOrExit();
const log = createLogger(config, 'release');
const { url, embedded } = await resolveDatabase(config, log);
try {
  await release(url, log);
} finally {
  await embedded?.stop();
}
