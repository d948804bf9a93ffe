import type { Config } from '../../src/config/schema.ts';
import { createDb } from '../../src/db/knex.ts';
import { createBoss } from '../../src/jobs/boss.ts';
import type { Deps } from '../../src/platform/deps.ts';
import { createLogger } from '../../src/platform/logger.ts';
import { testConfig } from '../support/config.ts';
import { testDatabase } from '../support/hooks.ts';
import type { JobContext } from '../../src/jobs/define.ts';
import { inTransaction } from '../../src/db/transaction.ts';
import { createDeps } from '../../src/app/deps.ts';

/** The deps a worker gives its handlers (real database, real pg-boss sender), for running handlers in-process. */
export async function workerDeps(overrides: Record<string, string> = {}): Promise<{ deps: Deps; context: JobContext; close(): Promise<void> }> {
  const config: Config = testConfig(overrides);
  const url = testDatabase().url;
  const db = createDb(url, { max: 6 });
  const boss = createBoss(url, 'web');
  await boss.start();
  const log = createLogger(config, 'test-worker');
  const deps: Deps = createDeps(config, db, boss, log);
  const context: JobContext = {
    deps,
    job: {} as JobContext['job'],
    log,
    signal: new AbortController().signal,
    lastAttempt: false,
    step: (work) => inTransaction(deps.db, work),
  };
  return {
    deps,
    context,
    async close() {
      await boss.stop({ graceful: false, close: true });
      await db.destroy();
    },
  };
}
