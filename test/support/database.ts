import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, chmod } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { startEmbeddedPostgres, type EmbeddedDatabase } from '../../src/db/embedded.ts';
import { createLogger } from '../../src/platform/logger.ts';
import { release } from '../../src/platform/release.ts';

/**
 * One throw-away database per test run: on DATABASE_URL's server when set, otherwise on an
 * embedded PostgreSQL in a temporary directory (tuned for speed: durability is not wanted here).
 */
export interface TestDatabase {
  url: string;
  /** A second, empty database on the same server (for tests that need a schema of their own). */
  createDatabase(prefix: string): Promise<string>;
  dispose(): Promise<void>;
}

const log = createLogger({ LOG_LEVEL: (process.env.TEST_LOG_LEVEL as 'silent') ?? 'silent' }, 'test-db');

export async function createTestDatabase(): Promise<TestDatabase> {
  let embedded: EmbeddedDatabase | undefined;
  let dir: string | undefined;
  let adminUrl: string;
  if (process.env.DATABASE_URL) {
    adminUrl = process.env.DATABASE_URL;
  } else {
    dir = await mkdtemp(path.join(tmpdir(), 'workspace-test-'));
    await chmod(dir, 0o755);
    embedded = await startEmbeddedPostgres({
      dir,
      database: 'postgres',
      log,
      flags: ['-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off'],
    });
    adminUrl = embedded.url;
  }
  const created: string[] = [];
  const createDatabase = async (prefix: string) => {
    const name = `${prefix}_${randomBytes(5).toString('hex')}`;
    await withClient(adminUrl, (client) => client.query(`CREATE DATABASE ${name}`));
    created.push(name);
    const url = new URL(adminUrl);
    url.pathname = `/${name}`;
    return url.toString();
  };
  const url = await createDatabase('workspace_test');
  await release(url, log);
  return {
    url,
    createDatabase,
    async dispose() {
      for (const name of created) {
        await withClient(adminUrl, (client) => client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)).catch(() => {});
      }
      await embedded?.stop();
      if (dir) await rm(dir, { recursive: true, force: true });
    },
  };
}

async function withClient<T>(url: string, run: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await run(client);
  } finally {
    await client.end();
  }
}
