import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { createDb, type Db } from '../../src/db/knex.ts';
import { allJobs } from '../../src/app/jobs.ts';
import { createBoss, ensureQueues } from '../../src/jobs/boss.ts';
import type { JobContext } from '../../src/jobs/define.ts';
import { testJob } from '../support/jobs.ts';
import { JobQueue } from '../../src/jobs/enqueue.ts';
import { createLogger } from '../../src/platform/logger.ts';
import { startWorker, type WorkerProcess } from '../../workers/main.ts';
import { isolatedDatabase, tuneQueue } from '../jobs/support.ts';
import type { Stack } from '../support/stack.ts';
import { assetImportJob } from '../../src/assets/jobs.ts';
import type { ApiResponse } from '../support/server.ts';
import { testConfig } from '../support/config.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

/**
 * A job the tests steer: it fails while `flaky.failing` is true, and a payload with `hold: true`
 * runs until its abort signal fires (recorded in `flaky.aborted`). Its queue allows no retry, so a
 * failure is final at once — the console's retry is what brings it back.
 */
export const flaky = { failing: true, runs: 0, aborted: [] as string[] };

export const flakyJob = testJob({
  name: 'test.flaky',
  version: 1,
  nature: 'computes',
  payload: z.object({ asset_id: z.string(), hold: z.boolean().optional() }).strict(),
  searchable: ['asset_id'],
  policy: { retryLimit: 0, heartbeatSeconds: null },
  handler: () =>
    Promise.resolve(async (payload: { asset_id: string; hold?: boolean | undefined }, { signal, job }: JobContext) => {
      flaky.runs += 1;
      if (payload.hold) {
        await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
        flaky.aborted.push(job.id);
        throw new Error('stopped: the job was cancelled');
      }
      if (flaky.failing) throw new Error(`flaky failure for ${payload.asset_id}`);
    }),
});

/** A queue nobody works (alerts: backlog age, no live worker). */
export const idleJob = testJob({
  name: 'test.idle',
  version: 1,
  nature: 'computes',
  payload: z.object({ asset_id: z.string() }).strict(),
  searchable: ['asset_id'],
  handler: () => Promise.resolve(async () => undefined),
});

export interface OpsStack {
  url: string;
  server: TestServer;
  worker: WorkerProcess;
  db: Db;
  queue: JobQueue;
  /** Sends a job for an organization (null: the platform's) outside any request. */
  send(
    job: typeof flakyJob | typeof idleJob,
    payload: { asset_id: string; hold?: boolean },
    organizationId: string | null,
    options?: { startAfter?: Date },
  ): Promise<string>;
  stop(): Promise<void>;
}

/** A web process and an in-process worker (every platform job plus the test jobs) on a database of their own. */
export async function startOpsStack(overrides: Record<string, string> = {}): Promise<OpsStack> {
  const url = await isolatedDatabase();
  const release = createBoss(url, 'release');
  await release.start();
  await ensureQueues(release, [flakyJob, idleJob]);
  await release.stop({ graceful: false, close: true });

  const db = createDb(url, { max: 4 });
  const server = await startTestServer(overrides, { databaseUrl: url });
  const config = testConfig({ WORKER_HEARTBEAT_SECONDS: '0.5', ...overrides });
  const worker = await startWorker(config, url, createLogger(config, 'test-worker'), { jobs: [...allJobs, flakyJob] });
  const boss = createBoss(url, 'web');
  await boss.start();
  const queue = new JobQueue(boss, [...allJobs, flakyJob, idleJob]);
  return {
    url,
    server,
    worker,
    db,
    queue,
    send: (job, payload, organizationId, options = {}) =>
      db.transaction((trx) => queue.enqueue(trx, job, payload, { organizationId, ...(options.startAfter && { startAfter: options.startAfter }) })),
    async stop() {
      await worker.stop();
      await server.stop();
      await boss.stop({ graceful: false, close: true });
      await db.destroy();
    },
  };
}

export const jobState = async (db: Db, id: string) => ((await db('pgboss.job').where({ id }).first('state')) as { state: string } | undefined)?.state;

export const newAssetId = () => randomUUID();

/** The import queue gives up at the first failure (no retry), so a failed link import is at hand in a second. */
export function allowNoRetry(stack: Pick<Stack, 'db'>): Promise<void> {
  const { connectionString } = stack.db.client.config.connection as { connectionString: string };
  return tuneQueue(connectionString, assetImportJob.name, { retryLimit: 0, retryDelay: 0, retryBackoff: false });
}

export const show = (res: ApiResponse) => `${res.status} ${JSON.stringify(res.body)}`;
