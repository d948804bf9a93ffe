import path from 'node:path';
import type { Config } from '../config/schema.ts';
import { startEmbeddedPostgres, type EmbeddedDatabase } from '../db/embedded.ts';
import type { Logger } from './logger.ts';

/**
 * DATABASE_URL when set; otherwise the embedded server under DATA_DIR (started, or reused if
 * running), in a session of its own: a Ctrl-C stops our processes, which then stop it, last.
 */
export async function resolveDatabase(config: Config, log: Logger): Promise<{ url: string; embedded?: EmbeddedDatabase }> {
  if (config.DATABASE_URL) return { url: config.DATABASE_URL };
  const embedded = await startEmbeddedPostgres({ dir: path.resolve(config.DATA_DIR), log, ownSession: true, port: config.EMBEDDED_PG_PORT });
  return { url: embedded.url, embedded };
}
