import { expect } from 'chai';
import type { Db } from '../../src/db/knex.ts';
import { createBoss } from '../../src/jobs/boss.ts';
import { webhookDeliveryJob } from '../../src/webhooks/jobs.ts';
import { testDataDir } from '../support/config.ts';
import { createOrganization, newUser } from '../support/factories.ts';
import type { ChildRun } from '../support/processes.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { sleep } from '../support/upstream.ts';
import { createDb, isolatedDatabase, spawnWorker } from '../jobs/support.ts';
import { anEvent, publishEvents, type Receiver, startReceiver, verify } from './support.ts';

/**
 * Deliveries while worker PROCESSES are SIGKILLed in a loop (every ~2 s the oldest is killed and a
 * replacement started), with a receiver slow enough that kills land mid-request: every event
 * reaches every endpoint at least once (receivers dedupe by `webhook-id`), every delivery ends
 * `succeeded`, and every attempt that got an answer on record is in the attempt log.
 */
describe('webhooks: workers SIGKILLed during delivery', function () {
  this.timeout(240_000);
  const EVENTS = 40;
  const ENDPOINTS = 3;
  const KILL_PHASE_MS = 60_000;
  let receiver: Receiver;
  let server: TestServer;
  let db: Db;
  let url: string;
  const workers = new Set<ChildRun>();
  const readyAt = new Map<ChildRun, number>();

  before(async () => {
    receiver = await startReceiver();
    for (let i = 0; i < ENDPOINTS; i++) receiver.on(`/k${i}`, () => ({ delayMs: 300 + Math.floor(Math.random() * 900) }));
    url = await isolatedDatabase();
    db = createDb(url, { max: 3 });
    // A dead worker's attempt is retried once its heartbeat is 10 s stale, at once (no backoff), as often as it takes.
    const boss = createBoss(url, 'release');
    await boss.start();
    try {
      await boss.updateQueue(webhookDeliveryJob.name, { heartbeatSeconds: 10, retryLimit: 50, retryDelay: 0, retryBackoff: false });
    } finally {
      await boss.stop({ graceful: false, close: true });
    }
    server = await startTestServer({ OUTBOUND_ALLOWLIST: `127.0.0.1:${receiver.port}` }, { databaseUrl: url });
  });
  after(async () => {
    for (const worker of workers) kill(worker);
    await Promise.all([...workers].map((worker) => worker.exited));
    await server?.stop();
    await db?.destroy();
    await receiver?.close();
  });

  const startWorker = () => {
    const worker = spawnWorker(url, { DATA_DIR: testDataDir(), OUTBOUND_ALLOWLIST: `127.0.0.1:${receiver.port}`, LOG_LEVEL: 'info' });
    workers.add(worker);
    worker.waitForOutput(/"worker started"/).then(
      () => readyAt.set(worker, Date.now()),
      () => undefined,
    );
    void worker.exited.then(() => {
      workers.delete(worker);
      readyAt.delete(worker);
    });
  };
  const kill = (worker: ChildRun) => {
    if (worker.child.exitCode === null && worker.child.signalCode === null) process.kill(-worker.child.pid!, 'SIGKILL');
  };

  it('delivers each event to each endpoint at least once and logs every delivery', async () => {
    const owner = newUser();
    const org = await createOrganization(server, owner);
    const endpoints: { id: string; secret: string; path: string }[] = [];
    for (let i = 0; i < ENDPOINTS; i++) {
      const res = await server.request('post', `/organizations/${org}/webhook-endpoints`, {
        token: owner.token,
        body: { url: `${receiver.url}/k${i}`, event_types: ['*'] },
      });
      expect(res.status).to.equal(201);
      endpoints.push({ id: res.body.webhook_endpoint.id, secret: res.body.secret, path: `/k${i}` });
    }
    const events = Array.from({ length: EVENTS }, () => anEvent(org));
    for (let i = 0; i < EVENTS; i += 10) await publishEvents(db, url, events.slice(i, i + 10));
    for (let i = 0; i < 2; i++) startWorker();

    const started = Date.now();
    let kills = 0;
    const pending = async () => Number((await db('webhook_deliveries').where({ status: 'pending' }).count('* as n').first())!.n);
    for (;;) {
      await sleep(2000);
      if ((await pending()) === 0) break;
      if (Date.now() - started > 200_000) throw new Error(`not done after 200 s (${kills} kills, ${await pending()} pending)`);
      // Kills for the first minute, then the fleet drains what is left: on a loaded machine a worker
      // spends most of a short life starting, and the property is about deliveries a kill interrupts.
      if (Date.now() - started > KILL_PHASE_MS) continue;
      const oldest = [...workers][0]!;
      if (Date.now() - (readyAt.get(oldest) ?? Infinity) < 1000) continue;
      kill(oldest);
      await oldest.exited;
      kills++;
      startWorker();
    }
    expect(kills, 'workers killed').to.be.at.least(3);

    const deliveries = await db('webhook_deliveries').select('id', 'endpoint_id', 'event_id', 'status', 'attempts');
    expect(deliveries).to.have.length(EVENTS * ENDPOINTS);
    expect(deliveries.filter((d) => d.status !== 'succeeded')).to.deep.equal([]);
    // Every delivery logged: its attempt rows are exactly its attempts, the last one the 200.
    const attempts = await db('webhook_delivery_attempts').select('delivery_id', 'attempt', 'response_status');
    for (const delivery of deliveries) {
      const mine = attempts.filter((a) => a.delivery_id === delivery.id).sort((a, b) => a.attempt - b.attempt);
      expect(
        mine.map((a) => a.attempt),
        delivery.id,
      ).to.deep.equal(Array.from({ length: delivery.attempts }, (_, i) => i + 1));
      expect(mine.at(-1)!.response_status).to.equal(200);
    }
    // At least once at each endpoint, every copy verified; duplicates are what a receiver dedupes by webhook-id.
    let duplicates = 0;
    for (const endpoint of endpoints) {
      const requests = receiver.at(endpoint.path);
      for (const request of requests) verify(endpoint.secret, request);
      const ids = new Set(requests.map((r) => r.headers['webhook-id']));
      expect([...ids].sort(), endpoint.path).to.deep.equal(events.map((e) => e.id).sort());
      duplicates += requests.length - ids.size;
    }
    const retried = await db('pgboss.job').where({ name: webhookDeliveryJob.name }).where('retry_count', '>', 0).count('* as n').first();
    console.log(
      `    webhook kill loop: ${EVENTS * ENDPOINTS} deliveries, ${kills} workers killed, ${retried?.n} jobs retried, ${duplicates} duplicate receipts, done after ${Date.now() - started} ms`,
    );
  });
});
