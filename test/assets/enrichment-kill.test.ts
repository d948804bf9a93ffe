import { expect } from 'chai';
import { assetEnrichmentJob } from '../../src/assets/jobs.ts';
import { assetThumbnailKey } from '../../src/assets/presenter.ts';
import type { Db } from '../../src/db/knex.ts';
import { createStorage } from '../../src/providers/storage/index.ts';
import { createDb, eventually, isolatedDatabase, retryDeadAttemptsQuickly, spawnWorker } from '../jobs/support.ts';
import { testConfig, testDataDir } from '../support/config.ts';
import { createOrganization } from '../support/organizations.ts';
import { useChildProcesses } from '../support/processes.ts';
import { newUser, startTestServer, type TestServer, type TestUser } from '../support/server.ts';
import { startUpstream, type FakeUpstream } from '../support/upstream.ts';
import { orientedJpeg } from './fixtures.ts';

/**
 * A worker process SIGKILLed in the middle of an enrichment — after its first stage (the image
 * probe) was recorded, before its thumbnails — and a second worker: the retried attempt resumes at
 * the thumbnails (the recorded stage is not run again), the asset is enriched once, the job
 * completes once. Real worker processes, real pg-boss heartbeats.
 */
describe('enrichment: a worker killed mid-way resumes and completes once (worker processes)', function () {
  this.timeout(120_000);
  let url: string;
  let db: Db;
  let server: TestServer;
  let upstream: FakeUpstream;
  let alice: TestUser;
  let org: string;
  let photo: Buffer;
  const worker = useChildProcesses((env: Record<string, string> = {}) =>
    spawnWorker(url, { DATA_DIR: testDataDir(), OUTBOUND_ALLOWLIST: `127.0.0.1:${upstream.port}`, WORKER_POLL_INTERVAL_SECONDS: '1', ...env }),
  );

  before(async () => {
    photo = await orientedJpeg(640, 480, 8);
    upstream = await startUpstream({
      '/photo.jpg': (_req, res) => {
        res.writeHead(200, { 'content-type': 'image/jpeg' });
        res.end(photo);
      },
    });
    url = await isolatedDatabase();
    db = createDb(url, { max: 2 });
    // A dead worker's attempt is retried once its heartbeat is 10 s stale, at once.
    await retryDeadAttemptsQuickly(url, assetEnrichmentJob.name);
    server = await startTestServer({}, { databaseUrl: url });
    alice = newUser();
    org = await createOrganization(server, alice);
  });
  after(async () => {
    await server?.stop();
    await db?.destroy();
    await upstream?.close();
  });

  const stages = (assetId: string) =>
    db('asset_enrichment_stages').where({ asset_id: assetId }).orderBy('stage').select('stage', db.raw('completed_at::text AS completed_at')) as Promise<
      { stage: string; completed_at: string }[]
    >;
  const enrichmentJobs = (assetId: string) =>
    db('pgboss.job').where({ name: assetEnrichmentJob.name }).whereRaw(`data->>'asset_id' = ?`, [assetId]).select('id', 'state', 'retry_count');

  it('killed after the image stage was recorded: the retry makes only the thumbnails, and the asset is enriched once', async () => {
    // Each recorded stage is followed by a minute's pause: the kill lands between the two stages.
    const first = worker({ ASSET_ENRICHMENT_STAGE_DELAY_MS: '60000' });
    const res = await server.request('post', '/assets/imports/link', { token: alice.token, body: { organization_id: org, url: `${upstream.url}/photo.jpg` } });
    expect(res.status).to.equal(201);
    const id = res.body.id as string;
    const probed = await eventually('the first worker recorded the image stage', async () => {
      const rows = await stages(id);
      return rows.length === 1 && rows;
    });
    expect(probed.map((row) => row.stage)).to.deep.equal(['image']);
    expect((await db('assets').where({ id }).first('enrichment_state')).enrichment_state).to.equal('in_progress');
    process.kill(-first.child.pid!, 'SIGKILL');
    expect((await first.exited).signal).to.equal('SIGKILL');
    expect(await stages(id)).to.deep.equal(probed);

    worker();
    await eventually(
      'the second worker finished the enrichment',
      async () => (await db('assets').where({ id }).first('enrichment_state')).enrichment_state === 'success',
      {
        everyMs: 200,
      },
    );
    const [job] = await enrichmentJobs(id);
    expect(await enrichmentJobs(id)).to.deep.equal([{ id: job.id, state: 'completed', retry_count: 1 }]);
    // The image stage kept its first record (not run again); the thumbnails were made once, by the retry.
    const after = await stages(id);
    expect(after.map((row) => row.stage)).to.deep.equal(['image', 'thumbnails']);
    expect(after[0]).to.deep.equal(probed[0]);
    const attempts = await eventually('both attempts are in the history', async () => {
      const rows = await db('job_attempts').where({ job_id: job.id }).orderBy('attempt').select('attempt', 'outcome');
      return rows.length === 2 && rows.every((row) => row.outcome !== null) && rows;
    });
    expect(attempts).to.deep.equal([
      { attempt: 0, outcome: 'lost' },
      { attempt: 1, outcome: 'completed' },
    ]);

    const asset = (await server.request('get', `/assets/${id}`, { token: alice.token })).body;
    // Orientation 8: stored 640×480, displayed rotated, 480×640.
    expect(asset.enrichment).to.deep.include({ width: 480, height: 640, orientation: 8, image_format: 'jpeg' });
    expect(asset.enrichment.thumbnails.map((t: { size: number; width: number; height: number }) => [t.size, t.width, t.height])).to.deep.equal([
      [256, 192, 256],
      [1024, 480, 640],
    ]);
    const storage = createStorage(testConfig());
    for (const size of [256, 1024]) expect((await storage.get(assetThumbnailKey(org, id, size)))?.contentType).to.equal('image/webp');
    expect(await db('activity_events').where({ subject_id: id }).orderBy('created_at').pluck('action')).to.deep.equal([
      'asset.import_started',
      'asset.imported',
      'asset.enriched',
    ]);
  });
});
