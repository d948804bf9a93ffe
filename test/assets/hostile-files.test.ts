import { expect } from 'chai';
import { assetEnrichmentJob } from '../../src/assets/jobs.ts';
import type { Db } from '../../src/db/knex.ts';
import { createDb, eventually, isolatedDatabase, spawnWorker } from '../jobs/support.ts';
import { testDataDir } from '../support/config.ts';
import { newOperator } from '../support/factories.ts';
import {
  docxBomb,
  docxLyingBomb,
  docxOfManyEntries,
  jpegClaiming,
  mp4Truncated,
  pdfInflating,
  pdfOfManyPages,
  wavClaiming4GB,
  webpClaiming,
} from '../support/hostile-files.ts';
import { createOrganization } from '../support/organizations.ts';
import { type ChildRun, useChildProcesses } from '../support/processes.ts';
import { newUser, startTestServer, type TestServer, type TestUser } from '../support/server.ts';
import { createUploadFor, sha256, tusSend } from '../uploads/support.ts';
import { docx, pdf, wav } from './fixtures.ts';
import { pngClaiming } from './helpers.ts';

const DOCX = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';

/**
 * Files built to take a worker down, uploaded by a member through tus and enriched by a real
 * worker process: each ends as enrichment `error` with the reason of the limit it hit, once (never
 * retried); its bytes still download; the worker is the same process before and after (same id in
 * /ops/workers, same pid), and an ordinary file enriched right after succeeds.
 */
describe('hostile files: enrichment refuses them and the worker survives (worker process)', function () {
  this.timeout(300_000);
  let url: string;
  let db: Db;
  let server: TestServer;
  let alice: TestUser;
  let org: string;
  let worker: ChildRun;
  const operator = newOperator();
  const spawn = useChildProcesses(() =>
    spawnWorker(url, { DATA_DIR: testDataDir(), WORKER_POLL_INTERVAL_SECONDS: '1', ASSET_EXTRACTION_MAX_FILE_BYTES: String(4 * 1024 * 1024) }),
  );

  before(async () => {
    url = await isolatedDatabase();
    db = createDb(url, { max: 2 });
    server = await startTestServer({}, { databaseUrl: url });
    alice = newUser();
    org = await createOrganization(server, alice);
  });
  after(async () => {
    await server?.stop();
    await db?.destroy();
  });

  const upload = async (bytes: Buffer, filename: string, mime_type: string) => {
    const res = await createUploadFor(server, alice, { organization_id: org, filename, mime_type, size: bytes.length });
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    await tusSend(res.body.upload.url, alice.token, bytes);
    return res.body.asset.id as string;
  };
  const enriched = (id: string) =>
    eventually(`enrichment of ${id} ended`, async () => {
      const asset = (await server.request('get', `/assets/${id}`, { token: alice.token })).body;
      return ['success', 'error'].includes(asset.enrichment_state) && asset;
    });
  /** This worker process as /ops/workers lists it. */
  const listed = async (child: ChildRun) => {
    const res = await server.request('get', '/ops/workers', { token: operator.token });
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    return (res.body.items as { id: string; pid: number; status: string }[])
      .filter((w) => w.pid === child.child.pid && w.status === 'live')
      .map(({ id, pid }) => ({ id, pid }));
  };

  it('every hostile format ends in error with its reason, once; the worker process is the same before and after; normal files enrich right after', async () => {
    worker = spawn();
    const before = await eventually('the worker is live in /ops/workers', async () => {
      const rows = await listed(worker);
      return rows.length === 1 && rows[0]!;
    });

    const hostile: [string, Buffer, string, string][] = [
      ['bomb.docx', docxBomb(), DOCX, 'too_large_uncompressed'],
      ['lying.docx', docxLyingBomb(), DOCX, 'too_large_uncompressed'],
      ['many.docx', docxOfManyEntries(), DOCX, 'too_many_entries'],
      ['inflating.pdf', pdfInflating(), 'application/pdf', 'too_large_uncompressed'],
      ['pages.pdf', pdfOfManyPages(), 'application/pdf', 'too_many_pages'],
      ['huge.png', pngClaiming(100_000, 100_000), 'image/png', 'image_too_large'],
      ['huge.jpg', await jpegClaiming(65_000, 65_000), 'image/jpeg', 'image_too_large'],
      ['huge.webp', await webpClaiming(16_000, 16_000), 'image/webp', 'image_too_large'],
      ['truncated.mp4', mp4Truncated(), 'video/mp4', 'declared_size_exceeds_file'],
      ['4gb.wav', wavClaiming4GB(), 'audio/wav', 'declared_size_exceeds_file'],
      // Over this worker's ASSET_EXTRACTION_MAX_FILE_BYTES (4 MiB): refused before it is read into memory.
      ['long.wav', wav(330), 'audio/wav', 'file_too_large'],
    ];
    for (const [filename, bytes, type, reason] of hostile) {
      const id = await upload(bytes, filename, type);
      const asset = await enriched(id);
      expect(asset.enrichment_state, filename).to.equal('error');
      expect(asset.enrichment_error.code, `${filename}: ${asset.enrichment_error.message}`).to.equal(reason);
      // Refused for good: one attempt, no retry.
      const jobs = await db('pgboss.job').where({ name: assetEnrichmentJob.name }).whereRaw(`data->>'asset_id' = ?`, [id]).select('state', 'retry_count');
      expect(jobs, filename).to.deep.equal([{ state: 'failed', retry_count: 0 }]);
      // The asset and its bytes stay usable.
      expect(asset.upload_file_state, filename).to.equal('success');
      const file = await fetch(`${server.url}/assets/${id}/file`, { headers: { authorization: `Bearer ${alice.token}` } });
      expect(file.status, filename).to.equal(200);
      expect(sha256(Buffer.from(await file.arrayBuffer())), filename).to.equal(sha256(bytes));
      expect(worker.child.exitCode, `the worker exited after ${filename}: ${worker.stderr().slice(-2000)}`).to.equal(null);
    }

    for (const [filename, bytes, type, facts] of [
      ['memo.docx', docx(['Budget memo for the harbour']), DOCX, { text_length: 27 }],
      ['report.pdf', pdf(['Quarterly revenue grew']), 'application/pdf', { page_count: 1 }],
      ['tone.wav', wav(1.5), 'audio/wav', { duration_seconds: 1.5 }],
    ] as const) {
      const asset = await enriched(await upload(bytes, filename, type));
      expect(asset.enrichment_state, `${filename}: ${JSON.stringify(asset.enrichment_error)}`).to.equal('success');
      expect(asset.enrichment, filename).to.deep.include(facts);
    }

    expect(await listed(worker)).to.deep.equal([before]);
    expect(worker.child.exitCode).to.equal(null);
    expect(worker.child.signalCode).to.equal(null);
  });
});
