import { expect } from 'chai';
import { createHash } from 'node:crypto';
import { assetFileKey } from '../../src/assets/presenter.ts';
import { assetEnrichmentJob, assetImportJob } from '../../src/assets/jobs.ts';
import type { Config } from '../../src/config/schema.ts';
import { createDb, type Db } from '../../src/db/knex.ts';
import { createBoss } from '../../src/jobs/boss.ts';
import { JobQueue } from '../../src/jobs/enqueue.ts';
import { createLogger } from '../../src/platform/logger.ts';
import { createStorage } from '../../src/providers/storage/index.ts';
import { startWorker, type WorkerProcess } from '../../workers/main.ts';
import { eventually, isolatedDatabase } from '../jobs/support.ts';
import { testConfig } from '../support/config.ts';
import { createOrganization } from '../support/organizations.ts';
import { newUser, startTestServer, type TestServer, type TestUser } from '../support/server.ts';
import { startUpstream, type FakeUpstream } from '../support/upstream.ts';
import { expectAssetShape, png } from './helpers.ts';

/** Link import end to end: real web process, real pg-boss, a real worker, a fake upstream on loopback. */
describe('link import and enrichment (worker)', function () {
  this.timeout(60_000);
  let upstream: FakeUpstream;
  let other: FakeUpstream;
  let server: TestServer;
  let worker: WorkerProcess;
  let db: Db;
  let url: string;
  let config: Config;
  let alice: TestUser;
  let org: string;
  const image = png(3, 2);
  let unavailableHits = 0;

  before(async () => {
    other = await startUpstream({ '/secret': (_req, res) => res.end('internal') });
    upstream = await startUpstream({
      '/photos/fox.png': (_req, res) => {
        res.writeHead(200, { 'content-type': 'image/png' });
        res.end(image);
      },
      '/notes.txt': (_req, res) => {
        res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' });
        res.end('naïve café');
      },
      '/moved': (_req, res) => {
        res.writeHead(302, { location: '/photos/fox.png' });
        res.end();
      },
      '/to-private': (_req, res) => {
        res.writeHead(302, { location: `http://127.0.0.1:${other.port}/secret` });
        res.end();
      },
      '/to-metadata': (_req, res) => {
        res.writeHead(302, { location: 'http://169.254.169.254/latest/meta-data/iam' });
        res.end();
      },
      '/huge.png': (_req, res) => {
        res.writeHead(200, { 'content-type': 'image/png' });
        for (let i = 0; i < 16; i++) res.write(Buffer.alloc(1024, 1));
        res.end();
      },
      '/slow.txt': (_req, res) => {
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.write('drip');
      },
      '/tool.exe': (_req, res) => {
        res.writeHead(200, { 'content-type': 'application/x-msdownload' });
        res.end('MZ');
      },
      // Answer a little later, so a PATCH right after the import's 201 lands while it is in progress.
      '/later.txt': (_req, res) => {
        setTimeout(() => {
          res.writeHead(200, { 'content-type': 'text/plain' });
          res.end('later');
        }, 300);
      },
      '/later.exe': (_req, res) => {
        setTimeout(() => {
          res.writeHead(200, { 'content-type': 'application/x-msdownload' });
          res.end('MZ');
        }, 300);
      },
      '/unavailable': (_req, res) => {
        unavailableHits++;
        res.writeHead(503);
        res.end();
      },
    });
    const overrides = { OUTBOUND_ALLOWLIST: `127.0.0.1:${upstream.port}`, ASSET_IMPORT_TIMEOUT_MS: '1500', ASSET_IMPORT_MAX_BYTES: '8192' };
    url = await isolatedDatabase();
    db = createDb(url, { max: 2 });
    // Retries without waiting, so the transient-failure test sees every attempt quickly.
    const boss = createBoss(url, 'release');
    await boss.start();
    // Retry at once (the worker still only sees it on its next poll).
    await boss.updateQueue(assetImportJob.name, { retryDelay: 0, retryBackoff: false });
    await boss.stop({ graceful: false, close: true });
    server = await startTestServer(overrides, { databaseUrl: url });
    config = testConfig(overrides);
    worker = await startWorker(config, url, createLogger(config, 'test-worker'));
    alice = newUser();
    org = await createOrganization(server, alice);
  });
  after(async () => {
    await worker?.stop();
    await server?.stop();
    await db?.destroy();
    await upstream?.close();
    await other?.close();
  });

  const startImport = async (source: string, extra: Record<string, unknown> = {}) => {
    const res = await server.request('post', '/assets/imports/link', { token: alice.token, body: { organization_id: org, url: source, ...extra } });
    expect(res.status).to.equal(201);
    expect(res.body.upload_file_state).to.equal('in_progress');
    return res.body.id as string;
  };
  const settled = (id: string) =>
    eventually(async () => {
      const row = await db('assets').where({ id }).first('upload_file_state', 'enrichment_state');
      if (row.upload_file_state === 'error') return row;
      return row.upload_file_state === 'success' && ['success', 'error'].includes(row.enrichment_state) ? row : null;
    });
  const get = async (id: string) => (await server.request('get', `/assets/${id}`, { token: alice.token })).body;
  const stored = (id: string) => createStorage(config).get(assetFileKey(org, id));
  const jobs = (queue: string, id: string) =>
    db('pgboss.job').where({ name: queue }).whereRaw(`data->>'asset_id' = ?`, [id]).orderBy('created_on').select('state', 'retry_count');

  it('imports a PNG: stores it, sets type/mime/url/title, then enrichment records size, checksum and dimensions', async () => {
    const id = await startImport(`${upstream.url}/moved`);
    await settled(id);
    const asset = await get(id);
    expectAssetShape(asset);
    expect(asset).to.deep.include({
      type: 'image',
      mime_type: 'image/png',
      url: `/assets/${id}/file`,
      title: 'fox.png',
      upload_file_state: 'success',
      enrichment_state: 'success',
    });
    expect(asset.metadata).to.equal(null);
    expect(asset.enrichment).to.deep.equal({
      size: image.length,
      checksum: { algorithm: 'sha256', value: createHash('sha256').update(image).digest('hex') },
      media_type: 'image/png',
      width: 3,
      height: 2,
      image_format: 'png',
      orientation: 1,
      // Smaller than both bounds: never enlarged.
      thumbnails: [256, 1024].map((size, i) => ({
        size,
        width: 3,
        height: 2,
        media_type: 'image/webp',
        bytes: asset.enrichment.thumbnails[i].bytes,
        path: `/assets/${id}/thumbnails/${size}`,
      })),
    });
    expect({ import_error: asset.import_error, enrichment_error: asset.enrichment_error }).to.deep.equal({ import_error: null, enrichment_error: null });
    const file = await fetch(`${server.url}/assets/${id}/file`, { headers: { authorization: `Bearer ${alice.token}` } });
    expect(file.status).to.equal(200);
    expect(file.headers.get('content-type')).to.equal('image/png');
    expect(file.headers.get('x-content-type-options')).to.equal('nosniff');
    expect(Buffer.from(await file.arrayBuffer()).equals(image)).to.equal(true);
    const params = await server.request('get', `/assets/${id}/imported-parameters`, { token: alice.token });
    expect(params.body).to.deep.include({
      asset_id: id,
      source_url: `${upstream.url}/moved`,
      final_url: `${upstream.url}/photos/fox.png`,
      redirects: [`${upstream.url}/photos/fox.png`],
      content_type: 'image/png',
      size: image.length,
      state: 'success',
      error: null,
    });
    expect(params.body.imported_at).to.be.a('string');
    expect(await db('activity_events').where({ subject_id: id }).orderBy('created_at').pluck('action')).to.deep.equal([
      'asset.import_started',
      'asset.imported',
      'asset.enriched',
    ]);
  });

  it('imports text, keeps the given title and measures the text length in characters', async () => {
    const id = await startImport(`${upstream.url}/notes.txt`, { title: 'My notes' });
    await settled(id);
    const asset = await get(id);
    expect(asset).to.deep.include({ type: 'text', mime_type: 'text/plain', title: 'My notes', upload_file_state: 'success', enrichment_state: 'success' });
    expect(asset.enrichment).to.deep.include({ size: Buffer.byteLength('naïve café'), text_length: 10, media_type: 'text/plain' });
  });

  it('is idempotent: a repeated import job and a crashed enrichment attempt change nothing twice', async () => {
    const id = await startImport(`${upstream.url}/photos/fox.png`);
    await settled(id);
    const before = await db('assets').where({ id }).first();
    const boss = createBoss(url, 'web');
    await boss.start();
    try {
      const queue = new JobQueue(boss);
      await db.transaction((trx) => queue.enqueue(trx, assetImportJob, { asset_id: id }, { organizationId: null }));
      // A crashed enrichment attempt leaves in_progress behind; the retry finishes it.
      await db('assets').where({ id }).update({ enrichment_state: 'in_progress' });
      await db.transaction((trx) => queue.enqueue(trx, assetEnrichmentJob, { asset_id: id }, { organizationId: null }));
    } finally {
      await boss.stop({ graceful: false, close: true });
    }
    await eventually(
      async () =>
        (await jobs(assetImportJob.name, id)).every((j) => j.state === 'completed') &&
        (await jobs(assetEnrichmentJob.name, id)).every((j) => j.state === 'completed'),
    );
    await eventually(async () => (await db('assets').where({ id }).first('enrichment_state')).enrichment_state === 'success');
    const after = await db('assets').where({ id }).first();
    expect(after.metadata).to.deep.equal(before.metadata);
    expect(after.enrichment).to.deep.equal(before.enrichment);
    expect(after.import_parameters).to.deep.equal(before.import_parameters);
    expect(await db('activity_events').where({ subject_id: id, action: 'asset.imported' }).count<{ count: number }[]>('* as count')).to.deep.equal([
      { count: 1 },
    ]);
    expect(await jobs(assetEnrichmentJob.name, id)).to.have.length(2);
  });

  const refusals: [string, () => string, string][] = [
    ['another port of the allowlisted loopback host', () => `http://127.0.0.1:${other.port}/secret`, 'address_not_allowed'],
    ['a 10.x address', () => 'http://10.0.0.7/file.png', 'address_not_allowed'],
    ['the cloud metadata address', () => 'http://169.254.169.254/latest/meta-data/', 'address_not_allowed'],
    ['an IPv4-mapped IPv6 loopback', () => `http://[::ffff:127.0.0.1]:${upstream.port}/photos/fox.png`, 'address_not_allowed'],
    ['a decimal spelling of loopback', () => `http://2130706433:${other.port}/secret`, 'address_not_allowed'],
    ['a hex spelling of loopback', () => `http://0x7f.0.0.1:${other.port}/secret`, 'address_not_allowed'],
    ['a redirect to a private address', () => `${upstream.url}/to-private`, 'address_not_allowed'],
    ['a redirect to the metadata address', () => `${upstream.url}/to-metadata`, 'address_not_allowed'],
    ['an oversize body', () => `${upstream.url}/huge.png`, 'too_large'],
    ['a body slower than the time limit', () => `${upstream.url}/slow.txt`, 'timeout'],
    ['a content type that is not a media asset', () => `${upstream.url}/tool.exe`, 'content_type_not_allowed'],
  ];
  for (const [label, target, code] of refusals) {
    it(`refuses ${label}: asset ends in error with the reason, nothing stored, no retry`, async () => {
      const source = target();
      const id = await startImport(source);
      await settled(id);
      const asset = await get(id);
      expectAssetShape(asset);
      expect(asset).to.deep.include({ upload_file_state: 'error', url: null, mime_type: null, enrichment_state: null });
      expect(asset.metadata).to.equal(null);
      expect(Object.keys(asset.import_error)).to.deep.equal(['code', 'message']);
      expect(asset.import_error.code).to.equal(code);
      expect(asset.import_error.message).to.be.a('string').and.not.equal('');
      // A refused address says which setting opens it.
      if (code === 'address_not_allowed')
        expect(asset.import_error.message).to.match(
          /which is not allowed \(server-side fetches reach public addresses only; an operator may open \S+ with OUTBOUND_ALLOWLIST\)$/,
        );
      expect(asset.enrichment).to.equal(null);
      expect(await stored(id)).to.equal(null);
      // The asset ends in the transaction that fails the job for good: a failed job, never a completed one.
      expect(await jobs(assetImportJob.name, id)).to.deep.equal([{ state: 'failed', retry_count: 0 }]);
      expect(await jobs(assetEnrichmentJob.name, id)).to.deep.equal([]);
      const params = (await server.request('get', `/assets/${id}/imported-parameters`, { token: alice.token })).body;
      expect(params).to.deep.include({ source_url: source, state: 'error', error: asset.import_error, size: null });
      expect(await db('activity_events').where({ subject_id: id }).orderBy('created_at').pluck('action')).to.deep.equal([
        'asset.import_started',
        'asset.import_failed',
      ]);
      expect((await server.request('get', `/assets/${id}/file`, { token: alice.token })).status).to.equal(404);
      expect(other.requests).to.deep.equal([]);
    });
  }

  describe("metadata is the user's: any JSON value round-trips exactly through the jobs", () => {
    const values: [string, unknown][] = [
      ['a string', 'plain-string'],
      ['a number', 42],
      ['an array', [1, 2]],
      ['an object', { a: 1 }],
      ['null', null],
    ];
    for (const [label, value] of values) {
      it(`${label}: create → enrichment → GET`, async () => {
        const res = await server.request('post', '/assets', {
          token: alice.token,
          body: { organization_id: org, type: 'text', content: 'héllo', metadata: value },
        });
        expect(res.status).to.equal(201);
        expect(res.body).to.deep.include({ metadata: value, enrichment_state: 'pending', enrichment: null, enrichment_error: null, import_error: null });
        await eventually(async () => (await db('assets').where({ id: res.body.id }).first('enrichment_state')).enrichment_state === 'success');
        const asset = await get(res.body.id);
        expectAssetShape(asset);
        expect(asset.metadata).to.deep.equal(value);
        expect(asset.enrichment).to.deep.include({ size: Buffer.byteLength('héllo'), text_length: 5, media_type: 'text/plain' });
        expect((await db('assets').where({ id: res.body.id }).first('metadata')).metadata).to.deep.equal(value);
      });

      it(`${label}: link import → enrichment → GET, and a refused import`, async () => {
        const imported = await startImport(`${upstream.url}/later.txt`);
        const refused = await startImport(`${upstream.url}/later.exe`);
        for (const id of [imported, refused]) {
          const patched = await server.request('patch', `/assets/${id}`, { token: alice.token, body: { metadata: value } });
          expect(patched.status).to.equal(200);
          expect(patched.body).to.deep.include({ metadata: value, upload_file_state: 'in_progress' });
        }
        await settled(imported);
        await settled(refused);
        const ok = await get(imported);
        expect(ok).to.deep.include({ upload_file_state: 'success', enrichment_state: 'success', import_error: null, enrichment_error: null });
        expect(ok.metadata).to.deep.equal(value);
        expect(ok.enrichment).to.deep.include({ size: 5, text_length: 5 });
        const failed = await get(refused);
        expect(failed).to.deep.include({ upload_file_state: 'error', enrichment: null });
        expect(failed.import_error.code).to.equal('content_type_not_allowed');
        expect(failed.metadata).to.deep.equal(value);
      });
    }
  });

  it('retries a transient upstream failure (asset stays in_progress), and its last attempt ends the asset in error', async () => {
    const id = await startImport(`${upstream.url}/unavailable`);
    // The worker retries at once until the last attempt (retryCount = retryLimit), whose failure ends the asset with the job.
    const [ended] = await eventually('the import failed for good', async () => {
      const found = await jobs(assetImportJob.name, id);
      return found[0]?.state === 'failed' ? found : null;
    });
    expect(ended).to.deep.equal({ state: 'failed', retry_count: assetImportJob.policy.retryLimit });
    expect(unavailableHits).to.equal(assetImportJob.policy.retryLimit + 1);
    const asset = await get(id);
    expect(asset.upload_file_state).to.equal('error');
    expect(asset.import_error.code).to.equal('upstream_status');
    expect(asset.import_error.message).to.match(/503/);
    expect(await stored(id)).to.equal(null);
    // In progress through every retry: one failure recorded, at the end; each attempt in the history.
    expect(await db('activity_events').where({ subject_id: id }).orderBy('created_at').pluck('action')).to.deep.equal([
      'asset.import_started',
      'asset.import_failed',
    ]);
    const attempts = await eventually('every attempt has ended in the history', async () => {
      const job = await db('pgboss.job').where({ name: assetImportJob.name }).whereRaw(`data->>'asset_id' = ?`, [id]).first('id');
      const rows = await db('job_attempts').where({ job_id: job.id }).orderBy('attempt').pluck('outcome');
      return rows.length === assetImportJob.policy.retryLimit + 1 && rows.every((outcome) => outcome !== null) && rows;
    });
    expect(attempts).to.deep.equal(Array.from({ length: assetImportJob.policy.retryLimit + 1 }, () => 'failed'));
  });
});

describe('migration: job findings leave metadata', function () {
  this.timeout(60_000);

  it("moves what earlier workers merged into metadata to the new fields and unwraps the user's value", async () => {
    const url = await isolatedDatabase();
    const db = createDb(url, { max: 1 });
    try {
      const migration = await import('../../migrations/20261123010000_asset_job_findings.ts');
      await migration.down(db);
      const [{ id: userId }] = await db('users').insert({ id: 'migration-user', email: 'm@example.test' }).returning('id');
      const [{ id: org }] = await db('organizations').insert({ name: 'M', slug: 'm-co', created_by_id: userId }).returning('id');
      const enrichment = { size: 3, checksum: { algorithm: 'sha256', value: 'abc' }, media_type: 'text/plain' };
      const importError = { code: 'too_large', message: 'too big' };
      const rows: [string, Record<string, unknown>][] = [
        ['wrapped string', { enrichment_state: 'success', metadata: { value: 'plain-string', enrichment } }],
        ['wrapped number', { enrichment_state: 'success', metadata: { value: 42, enrichment } }],
        ['wrapped array', { enrichment_state: 'success', metadata: { value: [1, 2], enrichment } }],
        ['merged object', { enrichment_state: 'success', metadata: { a: 1, enrichment } }],
        ['was null', { enrichment_state: 'success', metadata: { enrichment } }],
        ['failed enrichment', { enrichment_state: 'error', metadata: { a: 1, enrichment_error: 'the image could not be read' } }],
        ['failed import', { upload_file_state: 'error', metadata: { import_error: importError } }],
        ['untouched', { enrichment_state: 'ignored', metadata: { enrichment: 'mine', value: 'x' } }],
      ];
      for (const [title, fields] of rows) {
        await db('assets').insert({ organization_id: org, created_by_id: userId, type: 'text', title, ...fields, metadata: JSON.stringify(fields.metadata) });
      }
      await migration.up(db);
      const after = Object.fromEntries(
        (await db('assets').where({ organization_id: org }).select('title', 'metadata', 'enrichment', 'enrichment_error', 'import_error')).map(
          ({ title, ...rest }) => [title, rest],
        ),
      );
      expect(after).to.deep.equal({
        'wrapped string': { metadata: 'plain-string', enrichment, enrichment_error: null, import_error: null },
        'wrapped number': { metadata: 42, enrichment, enrichment_error: null, import_error: null },
        'wrapped array': { metadata: [1, 2], enrichment, enrichment_error: null, import_error: null },
        'merged object': { metadata: { a: 1 }, enrichment, enrichment_error: null, import_error: null },
        'was null': { metadata: null, enrichment, enrichment_error: null, import_error: null },
        'failed enrichment': {
          metadata: { a: 1 },
          enrichment: null,
          enrichment_error: { code: 'enrichment_failed', message: 'the image could not be read' },
          import_error: null,
        },
        'failed import': { metadata: null, enrichment: null, enrichment_error: null, import_error: importError },
        untouched: { metadata: { enrichment: 'mine', value: 'x' }, enrichment: null, enrichment_error: null, import_error: null },
      });
    } finally {
      await db.destroy();
    }
  });
});
