import { expect } from 'chai';
import type { Config } from '../../src/config/schema.ts';
import { runnableJob } from '../../src/app/jobs.ts';
import { createDb, type Db } from '../../src/db/knex.ts';
import type { RunnableJob } from '../../src/jobs/define.ts';
import { createLogger } from '../../src/platform/logger.ts';
import { ENDPOINT_CONCURRENCY, webhookDeliveryJob } from '../../src/webhooks/jobs.ts';
import { startWorker, type WorkerProcess } from '../../workers/main.ts';
import { testConfig } from '../support/config.ts';
import { eventually } from '../support/eventually.ts';
import { createOrganization, newUser, type TestUser } from '../support/factories.ts';
import { isolatedDatabase } from '../jobs/support.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { anEvent, publishEvents, type Receiver, startReceiver } from './support.ts';

/**
 * The per-endpoint limit is exact: several workers (16 delivery slots each) race for one endpoint's
 * backlog, and a receiver counting the requests it holds open never sees more than
 * ENDPOINT_CONCURRENCY at once — with pg-boss's group limit (which racing fetches can pass), and
 * with it out of the way, where the endpoint's slots alone hold the line. A delivery that found no
 * free slot went back to wait without using an attempt: every delivery took exactly one attempt.
 */
describe('webhooks: the per-endpoint concurrency limit under racing workers', function () {
  this.timeout(180_000);
  const WORKERS = 4;
  const EVENTS = 60;
  let receiver: Receiver;
  let server: TestServer;
  let db: Db;
  let url: string;
  let config: Config;
  let owner: TestUser;
  let workers: WorkerProcess[] = [];
  const counted = { open: 0, most: 0 };

  before(async () => {
    receiver = await startReceiver();
    url = await isolatedDatabase();
    const overrides = { OUTBOUND_ALLOWLIST: `127.0.0.1:${receiver.port}`, WORKER_POLL_INTERVAL_SECONDS: '0.5' };
    server = await startTestServer(overrides, { databaseUrl: url });
    config = testConfig(overrides);
    db = createDb(url, { max: 3 });
    owner = newUser();
  });
  afterEach(async () => {
    await Promise.all(workers.map((worker) => worker.stop()));
    workers = [];
  });
  after(async () => {
    await server?.stop();
    await db?.destroy();
    await receiver?.close();
  });

  /** An endpoint whose receiver holds each request 300–500 ms and counts how many it holds at once. */
  async function countedEndpoint(org: string, path: string) {
    receiver.on(path, () => {
      counted.open++;
      counted.most = Math.max(counted.most, counted.open);
      const delayMs = 300 + Math.floor(Math.random() * 200);
      setTimeout(() => counted.open--, delayMs);
      return { delayMs };
    });
    const res = await server.request('post', `/organizations/${org}/webhook-endpoints`, {
      token: owner.token,
      body: { url: `${receiver.url}${path}`, event_types: ['*'] },
    });
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    return res.body.webhook_endpoint.id as string;
  }

  async function race(path: string, delivery: RunnableJob, expectWaits: boolean) {
    counted.open = 0;
    counted.most = 0;
    // An organization of its own: its events reach this endpoint only.
    const org = await createOrganization(server, owner);
    const endpointId = await countedEndpoint(org, path);
    workers = await Promise.all(Array.from({ length: WORKERS }, (_, i) => startWorker(config, url, createLogger(config, `racer-${i}`), { jobs: [delivery] })));
    // One transaction: its commit wakes every worker's slots at the same instant.
    const events = Array.from({ length: EVENTS }, () => anEvent(org));
    await publishEvents(db, url, events);
    const deliveries = await eventually(
      `${EVENTS} deliveries to ${path} settled`,
      async () => {
        const rows = await db('webhook_deliveries').where({ endpoint_id: endpointId }).select('id', 'status', 'attempts');
        return rows.length === EVENTS && rows.every((row) => row.status !== 'pending') ? rows : null;
      },
      { timeoutMs: 150_000 },
    );
    // Never more than the limit at once, and the limit was reached (the test can tell).
    expect(counted.most, 'requests held open at once').to.equal(ENDPOINT_CONCURRENCY);
    // Each delivery succeeded at its first attempt, sent once: waiting for a slot used no attempt.
    expect(deliveries.filter((row) => row.status !== 'succeeded' || row.attempts !== 1)).to.deep.equal([]);
    expect(receiver.at(path)).to.have.length(EVENTS);
    expect(new Set(receiver.at(path).map((r) => r.headers['webhook-id'])).size).to.equal(EVENTS);
    // Every job completes (pg-boss's completion lands just after the delivery row is written), and
    // waiting for a slot used no retry: a job's limit rose by exactly its snoozes, as its history records them.
    const jobs = await eventually('every delivery job completed, its attempts recorded', async () => {
      const rows = (await db('pgboss.job as j')
        .where({ 'j.name': webhookDeliveryJob.name })
        .whereRaw(`j.data->>'delivery_id' = ANY(?::text[])`, [deliveries.map((row) => row.id)])
        .select(
          'j.state',
          'j.retry_limit',
          db.raw(`(SELECT count(*)::int FROM job_attempts a WHERE a.job_id = j.id AND a.error->>'code' = 'snoozed') AS snoozes`),
          db.raw('(SELECT count(*)::int FROM job_attempts a WHERE a.job_id = j.id AND a.ended_at IS NULL) AS open'),
        )) as { state: string; retry_limit: number; snoozes: number; open: number }[];
      return rows.length === EVENTS && rows.every((job) => job.state === 'completed' && job.open === 0) && rows;
    });
    expect(jobs.filter((job) => job.retry_limit - webhookDeliveryJob.policy.retryLimit !== job.snoozes)).to.deep.equal([]);
    // Without pg-boss's group limit every worker fetches the backlog at once, so some delivery must
    // wait for a slot; with it, whether racing fetches pass the limit depends on timing.
    if (expectWaits)
      expect(
        jobs.some((job) => job.snoozes > 0),
        'some delivery waited for a slot',
      ).to.equal(true);
    // Every slot is free again.
    expect(await db('webhook_endpoint_slots').where({ endpoint_id: endpointId }).whereNotNull('holder')).to.deep.equal([]);
  }

  it('with pg-boss’s group limit: never more than the limit in flight', async () => {
    await race('/with-group-limit', runnableJob(webhookDeliveryJob), false);
  });

  it('without pg-boss’s group limit (every worker fetches the backlog at once): the slots alone hold it', async () => {
    const unlimited = { ...runnableJob(webhookDeliveryJob), work: { localConcurrency: 16, groupConcurrency: 1000 } };
    await race('/slots-only', unlimited, true);
  });
});
