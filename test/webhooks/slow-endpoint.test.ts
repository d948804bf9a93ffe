import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { expect } from 'chai';
import { runnableJob } from '../../src/app/jobs.ts';
import { createDb, type Db } from '../../src/db/knex.ts';
import { createBoss } from '../../src/jobs/boss.ts';
import { localConcurrencyOf } from '../../src/jobs/define.ts';
import { JobQueue } from '../../src/jobs/enqueue.ts';
import { createLogger } from '../../src/platform/logger.ts';
import { ENDPOINT_CONCURRENCY, webhookDeliveryJob, webhookEndpointDisabledEmailJob } from '../../src/webhooks/jobs.ts';
import { startWorker, type WorkerProcess } from '../../workers/main.ts';
import { testConfig } from '../support/config.ts';
import { eventually } from '../support/eventually.ts';
import { createOrganization, newUser, type TestUser } from '../support/factories.ts';
import { isolatedDatabase } from '../jobs/support.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { fakeSmtp } from '../support/smtp.ts';
import { anEvent, publishEvents } from './support.ts';

/**
 * The delivery queue's slots are its own (WEBHOOK_DELIVERY_CONCURRENCY), not the worker's default
 * (WORKER_CONCURRENCY, here 1): with one endpoint hanging on all of its ENDPOINT_CONCURRENCY
 * requests, a worker with a slot to spare still delivers a healthy endpoint's events while those
 * requests hang — and still runs its other queues — whereas one with no slot beyond the hanging
 * endpoint's delivers nothing until the hung requests are cut off (the 10 s delivery timeout).
 * The receiver records, at each healthy request, how many of the hanging requests it still holds.
 */
describe('webhooks: a hanging endpoint and the delivery queue’s own slots', function () {
  this.timeout(120_000);
  let server: TestServer;
  let receiverServer: http.Server;
  let receiverUrl: string;
  let smtp: Awaited<ReturnType<typeof fakeSmtp>>;
  let db: Db;
  let url: string;
  let owner: TestUser;
  let worker: WorkerProcess | undefined;
  const sockets = new Set<Socket>();
  /** Per path: hanging requests the receiver holds right now (never answered; gone when the worker gives up). */
  const hanging = new Map<string, number>();
  const held = (path: string) => hanging.get(path) ?? 0;
  let hangingPath = '';
  /** Per healthy request: how many hanging requests were held when it arrived. */
  let healthySaw: number[] = [];

  before(async () => {
    receiverServer = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        const path = req.url ?? '';
        if (path.startsWith('/hang')) {
          hanging.set(path, held(path) + 1);
          res.on('close', () => hanging.set(path, held(path) - 1));
          return;
        }
        healthySaw.push(held(hangingPath));
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.end('ok');
      });
    });
    receiverServer.on('connection', (socket) => {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
    });
    await new Promise<void>((resolve) => receiverServer.listen(0, '127.0.0.1', resolve));
    const port = (receiverServer.address() as AddressInfo).port;
    receiverUrl = `http://127.0.0.1:${port}`;
    smtp = await fakeSmtp();
    url = await isolatedDatabase();
    server = await startTestServer({ OUTBOUND_ALLOWLIST: `127.0.0.1:${port}` }, { databaseUrl: url });
    db = createDb(url, { max: 3 });
    owner = newUser();
  });
  afterEach(async () => {
    await worker?.stop();
    worker = undefined;
  });
  after(async () => {
    await server?.stop();
    await db?.destroy();
    await smtp?.close();
    for (const socket of sockets) socket.destroy();
    await new Promise<void>((resolve) => receiverServer.close(() => resolve()));
  });

  async function endpoint(org: string, path: string, type: string): Promise<string> {
    const res = await server.request('post', `/organizations/${org}/webhook-endpoints`, {
      token: owner.token,
      body: { url: `${receiverUrl}${path}`, event_types: [type] },
    });
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    return res.body.webhook_endpoint.id as string;
  }

  /** An endpoint hanging on its ENDPOINT_CONCURRENCY requests, then HEALTHY events to a healthy endpoint; the healthy deliveries' rows once settled. */
  async function hangThenDeliver(deliverySlots: number, healthy: number, meanwhile: (org: string) => Promise<void> = async () => {}) {
    hangingPath = `/hang-${deliverySlots}`;
    healthySaw = [];
    const overrides = {
      OUTBOUND_ALLOWLIST: new URL(receiverUrl).host,
      SMTP_URL: smtp.url,
      WORKER_CONCURRENCY: '1',
      WEBHOOK_DELIVERY_CONCURRENCY: String(deliverySlots),
      WORKER_POLL_INTERVAL_SECONDS: '0.5',
    };
    const config = testConfig(overrides);
    expect(localConcurrencyOf(webhookDeliveryJob, config)).to.equal(deliverySlots);
    const org = await createOrganization(server, owner);
    await endpoint(org, hangingPath, 'member.added');
    const healthyId = await endpoint(org, `/healthy-${deliverySlots}`, 'credits.low_balance');
    worker = await startWorker(config, url, createLogger(config, 'slow-endpoint-worker'), {
      jobs: [runnableJob(webhookDeliveryJob), runnableJob(webhookEndpointDisabledEmailJob)],
    });
    await publishEvents(
      db,
      url,
      Array.from({ length: ENDPOINT_CONCURRENCY }, () => anEvent(org, 'member.added')),
    );
    await eventually('the slow endpoint holding all its requests', async () => held(hangingPath) === ENDPOINT_CONCURRENCY || null);
    await meanwhile(org);
    await publishEvents(
      db,
      url,
      Array.from({ length: healthy }, () => anEvent(org, 'credits.low_balance')),
    );
    const deliveries = await eventually(
      `${healthy} healthy deliveries settled`,
      async () => {
        const rows = await db('webhook_deliveries').where({ endpoint_id: healthyId }).select('status', 'attempts');
        return rows.length === healthy && rows.every((row) => row.status !== 'pending') ? rows : null;
      },
      { timeoutMs: 60_000 },
    );
    expect(deliveries.filter((row) => row.status !== 'succeeded' || row.attempts !== 1)).to.deep.equal([]);
  }

  it('with slots to spare beyond the hanging endpoint’s, a healthy endpoint is served while it hangs, and other queues run', async () => {
    /** Another queue of the same worker (WORKER_CONCURRENCY 1): an e-mail sent while the endpoint hangs. */
    const email = async (org: string) => {
      const boss = createBoss(url, 'web');
      await boss.start();
      try {
        await db.transaction((trx) =>
          new JobQueue(boss).enqueue(
            trx,
            webhookEndpointDisabledEmailJob,
            {
              organization_id: org,
              endpoint_id: 'e',
              to: 'ops@example.test',
              subject: 'A test',
              text: 'Sent beside hanging deliveries.',
              idempotency_key: `slow-${org}`,
            },
            { organizationId: org },
          ),
        );
      } finally {
        await boss.stop({ graceful: false, close: true });
      }
    };
    await hangThenDeliver(ENDPOINT_CONCURRENCY + 1, 6, email);
    // Every healthy request arrived while the hanging endpoint held all of its requests.
    expect(healthySaw).to.deep.equal(Array(6).fill(ENDPOINT_CONCURRENCY));
    await eventually('the e-mail sent', async () => smtp.received.some((mail) => mail.to.includes('ops@example.test')) || null);
  });

  it('with no slot beyond the hanging endpoint’s, nothing else is delivered until its requests are cut off (the test can tell)', async () => {
    await hangThenDeliver(ENDPOINT_CONCURRENCY, 2);
    // Each healthy request came only after a hung one was cut off, freeing its slot: none while all
    // four were held (how many were still held then depends on how far apart the four started).
    expect(healthySaw).to.have.length(2);
    expect(healthySaw.filter((held) => held >= ENDPOINT_CONCURRENCY)).to.deep.equal([]);
  });
});
