import { createDb, type Db } from '../../src/db/knex.ts';
import { createLogger } from '../../src/platform/logger.ts';
import { startWorker, type WorkerProcess } from '../../workers/main.ts';
import { isolatedDatabase } from '../jobs/support.ts';
import { testConfig } from './config.ts';
import { startTestServer, type TestServer } from './server.ts';

export interface Stack {
  /** The stack's own database. */
  url: string;
  server: TestServer;
  worker: WorkerProcess;
  /** A small pool on the same database, for asserting side effects. */
  db: Db;
  stop(): Promise<void>;
}

/**
 * A web process and an in-process worker (real pg-boss, every job) on a database of their own, so
 * the suite's queues and NOTIFY channels are its own. `workerOverrides` add to `overrides` for the
 * worker only (e.g. a provider URL the web process must not know).
 */
export async function startStack(overrides: Record<string, string> = {}, workerOverrides: Record<string, string> = {}): Promise<Stack> {
  const url = await isolatedDatabase();
  const db = createDb(url, { max: 4 });
  const server = await startTestServer(overrides, { databaseUrl: url });
  const config = testConfig({ ...overrides, ...workerOverrides });
  const worker = await startWorker(config, url, createLogger(config, 'test-worker'));
  return {
    url,
    server,
    worker,
    db,
    async stop() {
      await worker.stop();
      await server.stop();
      await db.destroy();
    },
  };
}
