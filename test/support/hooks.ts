import { appendFileSync } from 'node:fs';
import { CLUSTER_ENV, clusterFromEnv, createFileDatabase, createTestDatabase, startTestCluster, type TestCluster, type TestDatabase } from './database.ts';
import { registerResourceTypes } from '../../src/access/index.ts';
import { resourceTypes } from '../../src/app/resource-types.ts';
import { setTransactionGuard, takeTransactionGuardViolations } from '../../src/db/transaction-guard.ts';

// Tests stand in for the composition roots (src/app/deps.ts, src/app/routes.ts): a test calling the access
// module or a service directly sees the same resource types a process does.
registerResourceTypes(resourceTypes);

// The transaction guard is on for the whole suite, in this process and in every process a test starts
// (they inherit the environment): a statement that would wait for a second pool connection inside an
// open transaction fails (src/db/transaction-guard.ts).
process.env.DB_TRANSACTION_GUARD ??= 'throw';
setTransactionGuard(process.env.DB_TRANSACTION_GUARD as 'throw');

// Kept on globalThis: mocha may load this file as a root-hook module and tests import it again.
const state = globalThis as {
  __workspaceTestDatabase?: TestDatabase;
  __workspaceTestCluster?: TestCluster;
  /** Read by eventually(): it gives up just before the running test would time out. */
  __workspaceCurrentTest?: { test: Mocha.Runnable; startedAt: number };
  __workspaceFileStartedAt?: number;
};

/** This test file's database; available once the root `beforeAll` hook has run. */
export function testDatabase(): TestDatabase {
  if (!state.__workspaceTestDatabase) throw new Error('test database not started (is test/support/hooks.ts in .mocharc.json?)');
  return state.__workspaceTestDatabase;
}

/**
 * Global fixtures: run once per `mocha` invocation in its main process, before any worker starts.
 * They start the server and build the migrated template; workers inherit process.env.
 */
export async function mochaGlobalSetup(): Promise<void> {
  const cluster = await startTestCluster();
  state.__workspaceTestCluster = cluster;
  process.env[CLUSTER_ENV.adminUrl] = cluster.adminUrl;
  process.env[CLUSTER_ENV.template] = cluster.template;
  process.env[CLUSTER_ENV.run] = cluster.run;
}

export async function mochaGlobalTeardown(): Promise<void> {
  await state.__workspaceTestCluster?.dispose();
  state.__workspaceTestCluster = undefined;
}

/**
 * Root hooks: with `--parallel` mocha runs them once per test file (serially, once per run), so
 * each file gets a fresh database cloned from the template.
 */
export const mochaHooks = {
  async beforeAll(this: Mocha.Context) {
    this.timeout(120_000);
    state.__workspaceFileStartedAt = Date.now();
    const cluster = clusterFromEnv();
    state.__workspaceTestDatabase = cluster ? await createFileDatabase(cluster) : await createTestDatabase();
  },
  beforeEach(this: Mocha.Context) {
    takeTransactionGuardViolations();
    state.__workspaceCurrentTest = this.currentTest ? { test: this.currentTest, startedAt: Date.now() } : undefined;
  },
  afterEach(this: Mocha.Context) {
    state.__workspaceCurrentTest = undefined;
    // A test whose code caught the guard's error (a 500, a retried job) still fails, naming where it happened.
    const violations = takeTransactionGuardViolations();
    if (violations.length > 0 && this.currentTest?.state === 'failed')
      process.stderr.write(`transaction guard, during the failed test: ${violations[0]!.stack}\n`);
    if (violations.length > 0 && this.currentTest?.state === 'passed')
      throw new Error(`the transaction guard failed ${violations.length} statement(s) during this test; the first:\n${violations[0]!.stack}`);
  },
  async afterAll(this: Mocha.Context) {
    this.timeout(60_000);
    await state.__workspaceTestDatabase?.dispose();
    state.__workspaceTestDatabase = undefined;
    // TEST_TIMINGS=file: one line per test file (milliseconds, path), to see which files bound a parallel run.
    if (process.env.TEST_TIMINGS && state.__workspaceFileStartedAt) {
      const files = [...new Set(this.test?.parent?.suites.map((suite) => suite.file).filter(Boolean))];
      appendFileSync(process.env.TEST_TIMINGS, `${Date.now() - state.__workspaceFileStartedAt}\t${files.join(' ')}\n`);
    }
  },
};
