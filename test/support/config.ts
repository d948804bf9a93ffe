import path from 'node:path';
import { tmpdir } from 'node:os';
import { parseConfig } from '../../src/config/load.ts';
import type { Config } from '../../src/config/schema.ts';

export const TEST_JWT_SECRET = 'test-secret-0123456789-abcdefghijklmnopqrstuvwxyz';

/** Local object storage of the test processes: one directory per run (removed by its teardown), else per process. */
export const testDataDir = (run = process.env.WORKSPACE_TEST_RUN) => path.join(tmpdir(), `workspace-test-data-${run ?? process.pid}`);

/** A configuration as the processes would parse it, with test defaults and per-test overrides. */
export function testConfig(overrides: Record<string, string> = {}): Config {
  return parseConfig({
    NODE_ENV: 'test',
    PORT: '0',
    HOST: '127.0.0.1',
    JWT_SECRET: TEST_JWT_SECRET,
    DATA_DIR: testDataDir(),
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    RATE_LIMIT_PER_MINUTE: '100000',
    RATE_LIMIT_PER_ADDRESS_PER_MINUTE: '100000',
    WORKER_SUPERVISE_INTERVAL_SECONDS: '1',
    // No transaction waits for a second connection: the suite fails any statement that would (test/support/hooks.ts).
    DB_TRANSACTION_GUARD: process.env.DB_TRANSACTION_GUARD ?? 'throw',
    ...overrides,
  });
}
