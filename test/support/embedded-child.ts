// Test helper process: starts the embedded PostgreSQL in the directory given as argv[2], prints
// `URL=<connection string>` and then idles until it is killed (orphan-recovery test).
import { startEmbeddedPostgres } from '../../src/db/embedded.ts';
import { createLogger } from '../../src/platform/logger.ts';

const embedded = await startEmbeddedPostgres({ dir: process.argv[2]!, log: createLogger({ LOG_LEVEL: 'silent' }, 'embedded-child') });
process.stdout.write(`URL=${embedded.url}\n`);
setInterval(() => {}, 60_000);
