import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, chmod } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { startEmbeddedPostgres, type EmbeddedDatabase } from '../../src/db/embedded.ts';
import { createLogger } from '../../src/platform/logger.ts';
import { release } from '../../src/app/release.ts';
import { testDataDir } from './config.ts';

/**
 * Test databases. A run starts one server (DATABASE_URL's when set, otherwise an embedded
 * PostgreSQL in a temporary directory, tuned for speed: durability is not wanted here) and builds
 * one migrated template database on it (`startTestCluster`, a mocha global fixture). Every test
 * file then gets a database of its own cloned from the template (`createFileDatabase`, a root
 * hook), so files can run in parallel without seeing each other's rows or jobs.
 */
export interface TestDatabase {
  url: string;
  /** A second, empty database on the same server (for tests that need a schema of their own). */
  createDatabase(prefix: string): Promise<string>;
  /** A second database on the same server, already migrated (a clone of the run's template). */
  createMigratedDatabase(prefix: string): Promise<string>;
  dispose(): Promise<void>;
}

/** The run's server and template, as the global fixture hands them to mocha's workers (through process.env). */
export interface TestCluster {
  adminUrl: string;
  /** Name of the migrated template database. */
  template: string;
  /** Part of every database name this run creates, so teardown can find them all. */
  run: string;
  dispose(): Promise<void>;
}

export const CLUSTER_ENV = { adminUrl: 'WORKSPACE_TEST_ADMIN_URL', template: 'WORKSPACE_TEST_TEMPLATE', run: 'WORKSPACE_TEST_RUN' } as const;

const log = createLogger({ LOG_LEVEL: (process.env.TEST_LOG_LEVEL as 'silent') ?? 'silent' }, 'test-db');

const urlOf = (adminUrl: string, name: string) => {
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return url.toString();
};

/** Starts the run's server and builds its migrated template database (`release()`: migrations, pg-boss, queues). */
export async function startTestCluster(): Promise<TestCluster> {
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
  const run = randomBytes(5).toString('hex');
  const template = `tmpl_${run}`;
  const dispose = async () => {
    await dropRunDatabases(adminUrl, run).catch(() => {});
    await embedded?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
    await rm(testDataDir(run), { recursive: true, force: true });
  };
  try {
    await withClient(adminUrl, (client) => client.query(`CREATE DATABASE ${template}`));
    await release(urlOf(adminUrl, template), log);
  } catch (error) {
    // A failed migration must not leave a server running or a cluster behind (mocha skips teardown then).
    await dispose().catch(() => {});
    throw error;
  }
  return { adminUrl, template, run, dispose };
}

/** Every database of the run, the template included (they all carry the run id in their name). */
async function dropRunDatabases(adminUrl: string, run: string): Promise<void> {
  await withClient(adminUrl, async (client) => {
    const { rows } = await client.query<{ datname: string }>(`SELECT datname FROM pg_database WHERE strpos(datname, $1) > 0`, [`_${run}`]);
    for (const { datname } of rows) await client.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(datname)} WITH (FORCE)`).catch(() => {});
  });
}

/**
 * A test file's database: a clone of the run's template (a file copy, far quicker than migrating).
 * `dispose()` drops it and the databases created through it when nothing is connected any more;
 * otherwise they stay for the run's teardown, which drops every database of the run.
 */
export async function createFileDatabase(cluster: Pick<TestCluster, 'adminUrl' | 'template' | 'run'>): Promise<TestDatabase> {
  const { adminUrl, template, run } = cluster;
  const created: string[] = [];
  const create = async (prefix: string, from?: string) => {
    const name = `${prefix}_${run}_${randomBytes(5).toString('hex')}`;
    await withClient(adminUrl, (client) => client.query(`CREATE DATABASE ${name}${from ? ` TEMPLATE ${from}` : ''}`));
    created.push(name);
    return urlOf(adminUrl, name);
  };
  const url = await create('file', template);
  return {
    url,
    createDatabase: (prefix) => create(prefix),
    createMigratedDatabase: (prefix) => create(prefix, template),
    async dispose() {
      await withClient(adminUrl, async (client) => {
        for (const name of created.splice(0)) {
          const { rows } = await client.query(`SELECT 1 FROM pg_stat_activity WHERE datname = $1 LIMIT 1`, [name]);
          if (rows.length === 0) await client.query(`DROP DATABASE IF EXISTS ${name}`).catch(() => {});
        }
      }).catch(() => {});
    },
  };
}

/**
 * A server and one migrated database of its own, for a run without the global fixture (e.g. mocha
 * used programmatically with only the root hooks): the cluster and the file database in one.
 */
export async function createTestDatabase(): Promise<TestDatabase> {
  const cluster = await startTestCluster();
  const database = await createFileDatabase(cluster);
  return {
    ...database,
    async dispose() {
      await database.dispose();
      await cluster.dispose();
    },
  };
}

/** The cluster the global fixture published in process.env, if any. */
export function clusterFromEnv(): Pick<TestCluster, 'adminUrl' | 'template' | 'run'> | undefined {
  const adminUrl = process.env[CLUSTER_ENV.adminUrl];
  const template = process.env[CLUSTER_ENV.template];
  const run = process.env[CLUSTER_ENV.run];
  return adminUrl && template && run ? { adminUrl, template, run } : undefined;
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
