import { createDb, type Db } from '../../src/db/knex.ts';
import { testDatabase } from './hooks.ts';
import { startTestServer, type TestServer } from './server.ts';

export interface ServerSuite {
  /** The real web process; set once the suite's `before` hook has run. */
  server: TestServer;
  /** A direct connection to the test database, for arranging state and asserting side effects. */
  db: Db;
}

/**
 * Registers the `before`/`after` hooks that start a test server and a database connection for the
 * enclosing `describe`, and stop them after it. Read `server` and `db` inside hooks and tests only.
 * `overrides` may be a function when it depends on an earlier `before` hook (e.g. a fake upstream's url).
 */
export function useServer(overrides: Record<string, string> | (() => Record<string, string>) = {}, options: { pool?: number } = {}): ServerSuite {
  const suite = {} as ServerSuite;
  before(async () => {
    suite.server = await startTestServer(typeof overrides === 'function' ? overrides() : overrides);
    suite.db = createDb(testDatabase().url, { max: options.pool ?? 2 });
  });
  after(async () => {
    await suite.server.stop();
    await suite.db.destroy();
  });
  return suite;
}
