import { expect } from 'chai';
import type http from 'node:http';
import { assetImportJob } from '../../src/assets/jobs.ts';
import { createBoss } from '../../src/jobs/boss.ts';
import { defaultPolicy } from '../../src/jobs/define.ts';
import { createOrganization } from '../support/organizations.ts';
import { useChildProcesses } from '../support/processes.ts';
import { newUser, startTestServer, type TestServer, type TestUser } from '../support/server.ts';
import { startUpstream, type FakeUpstream } from '../support/upstream.ts';
import { createDb, eventually, isolatedDatabase, spawnWorker } from './support.ts';
import type { Db } from '../../src/db/knex.ts';

/**
 * Heartbeats: a running attempt refreshes its heartbeat, and the supervisor fails an attempt whose
 * heartbeat went stale, so a SIGKILLed worker's job is retried long before `expireInSeconds`.
 * Real worker processes, a real web process and a fake upstream on loopback.
 */
describe('job heartbeats (worker processes)', function () {
  this.timeout(90_000);
  const HEARTBEAT_SECONDS = 10; // pg-boss's minimum
  let url: string;
  let db: Db;
  let server: TestServer;
  let upstream: FakeUpstream;
  let alice: TestUser;
  let org: string;
  /** Responses held open: the first request of each path hangs until released (or its worker dies). */
  const held: http.ServerResponse[] = [];
  const hits: Record<string, number> = {};
  const worker = useChildProcesses((env: Record<string, string> = {}) =>
    spawnWorker(url, { OUTBOUND_ALLOWLIST: `127.0.0.1:${upstream.port}`, ASSET_IMPORT_TIMEOUT_MS: '120000', WORKER_POLL_INTERVAL_SECONDS: '1', ...env }),
  );

  before(async () => {
    upstream = await startUpstream({
      // First request hangs (its worker is killed); the retry is answered at once.
      '/hangs-once.txt': (_req, res) => {
        hits['hangs-once'] = (hits['hangs-once'] ?? 0) + 1;
        if (hits['hangs-once'] === 1) return void held.push(res);
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.end('second time lucky');
      },
      // Answers after 1.5 heartbeat periods: the attempt must stay alive that long.
      '/slow.txt': (_req, res) => {
        hits.slow = (hits.slow ?? 0) + 1;
        setTimeout(() => {
          res.writeHead(200, { 'content-type': 'text/plain' });
          res.end('slow but fine');
        }, HEARTBEAT_SECONDS * 1500);
      },
    });
    url = await isolatedDatabase();
    db = createDb(url, { max: 2 });
    const boss = createBoss(url, 'release');
    await boss.start();
    try {
      // `release` gave every queue the default heartbeat; the test shortens it, and keeps expiry long.
      expect((await boss.getQueue(assetImportJob.name))?.heartbeatSeconds).to.equal(defaultPolicy.heartbeatSeconds);
      await boss.updateQueue(assetImportJob.name, { heartbeatSeconds: HEARTBEAT_SECONDS, retryDelay: 0, retryBackoff: false });
      expect(await boss.getQueue(assetImportJob.name)).to.deep.include({ heartbeatSeconds: HEARTBEAT_SECONDS, expireInSeconds: 600 });
    } finally {
      await boss.stop({ graceful: false, close: true });
    }
    server = await startTestServer({}, { databaseUrl: url });
    alice = newUser();
    org = await createOrganization(server, alice);
  });
  after(async () => {
    for (const res of held) res.destroy();
    await server?.stop();
    await db?.destroy();
    await upstream?.close();
  });

  const importJob = (assetId: string) =>
    db('pgboss.job')
      .where({ name: assetImportJob.name })
      .whereRaw(`data->>'asset_id' = ?`, [assetId])
      .first('id', 'state', 'retry_count', 'expire_seconds', 'heartbeat_seconds');
  const startImport = async (path: string) => {
    const res = await server.request('post', '/assets/imports/link', { token: alice.token, body: { organization_id: org, url: `${upstream.url}${path}` } });
    expect(res.status).to.equal(201);
    return res.body.id as string;
  };

  it('retries the link import of a SIGKILLed worker within seconds of its heartbeat going stale, not after expiry', async () => {
    const id = await startImport('/hangs-once.txt');
    const first = worker();
    await eventually(async () => hits['hangs-once'] === 1 && (await importJob(id))?.state === 'active');
    expect(await importJob(id)).to.deep.include({ retry_count: 0, expire_seconds: 600, heartbeat_seconds: HEARTBEAT_SECONDS });
    process.kill(-first.child.pid!, 'SIGKILL');
    expect((await first.exited).signal).to.equal('SIGKILL');
    const killedAt = Date.now();

    worker();
    const asset = await eventually(async () => {
      const row = await db('assets').where({ id }).first('upload_file_state', 'enrichment_state');
      return row.upload_file_state === 'success' && row.enrichment_state === 'success' ? row : null;
    }, 100);
    const seconds = (Date.now() - killedAt) / 1000;
    expect(asset).to.deep.equal({ upload_file_state: 'success', enrichment_state: 'success' });
    // Stale after ≤ HEARTBEAT_SECONDS, found by the next 1 s monitor pass, picked up by the 1 s poll.
    expect(seconds).to.be.below(HEARTBEAT_SECONDS + 10);
    expect(seconds).to.be.below(600 / 10);
    expect(await importJob(id)).to.deep.include({ state: 'completed', retry_count: 1 });
    expect(hits['hangs-once']).to.equal(2);
    expect((await server.request('get', `/assets/${id}`, { token: alice.token })).body.enrichment).to.deep.include({ size: 'second time lucky'.length });
  });

  it('keeps a live attempt that runs longer than the heartbeat period: no retry', async () => {
    const id = await startImport('/slow.txt');
    worker();
    await eventually(async () => (await db('assets').where({ id }).first('upload_file_state')).upload_file_state === 'success', 200);
    expect(await importJob(id)).to.deep.include({ state: 'completed', retry_count: 0 });
    expect(hits.slow).to.equal(1);
  });
});
