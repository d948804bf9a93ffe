import { expect } from 'chai';
import { existsSync, readFileSync } from 'node:fs';
import { cleanUpUploadsJob } from '../../src/assets/uploads/jobs.ts';
import { createBoss } from '../../src/jobs/boss.ts';
import { JobQueue } from '../../src/jobs/enqueue.ts';
import { png } from '../assets/helpers.ts';
import { eventually } from '../support/eventually.ts';
import { addMember, createOrganization } from '../support/organizations.ts';
import { newUser, type TestUser } from '../support/server.ts';
import {
  createUploadFor,
  expectNoStagedBytes,
  failedStatus,
  noise,
  patchAndKill,
  sha256,
  startUploadStack,
  storedFile,
  tusRequest,
  tusSend,
  type UploadStack,
} from './support.ts';

/** Resumable uploads on the local disk store: the real tus client over real HTTP, a real worker. */
describe('asset uploads (tus, local disk)', function () {
  this.timeout(60_000);
  let stack: UploadStack;
  let alice: TestUser;
  let org: string;

  before(async () => {
    stack = await startUploadStack({ UPLOAD_MAX_FILE_BYTES: String(4 * 1024 * 1024), UPLOAD_ORGANIZATION_LIMIT_BYTES: String(6 * 1024 * 1024) });
    alice = newUser();
    org = await createOrganization(stack.server, alice);
  });
  after(async () => stack?.stop());

  const start = async (body: Record<string, unknown>, organizationId = org, user = alice) => {
    const res = await createUploadFor(stack.server, user, { organization_id: organizationId, ...body });
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    return res.body as { asset: any; upload: any };
  };
  const asset = async (id: string) => (await stack.server.request('get', `/assets/${id}`, { token: alice.token })).body;
  const uploadRow = (id: string) => stack.db('asset_uploads').where({ id }).first();

  it('uploads in chunks, survives a connection killed half-way, resumes from the server offset, then stores, verifies and enriches', async () => {
    const image = Buffer.concat([png(40, 30), noise(0)]);
    const bytes = Buffer.concat([image, Buffer.alloc(0)]);
    const { asset: created, upload } = await start({ filename: 'fox.png', mime_type: 'image/png', size: bytes.length, checksum_sha256: sha256(bytes) });
    expect(created).to.deep.include({
      type: 'image',
      title: 'fox.png',
      mime_type: 'image/png',
      upload_file_state: 'in_progress',
      enrichment_state: null,
      url: null,
    });
    expect(upload).to.deep.include({ asset_id: created.id, size: bytes.length, offset: 0, state: 'in_progress', checksum_sha256: sha256(bytes), error: null });
    expect(upload.url).to.equal(`${stack.server.url}/asset-uploads/${upload.id}`);

    // Half of the file in a request whose connection dies after a third of it.
    const half = Math.floor(bytes.length / 2);
    await patchAndKill(upload.url, alice.token, 0, bytes.subarray(0, half), Math.floor(half / 3));
    const head = await eventually('the server kept what arrived', async () => {
      const res = await tusRequest(upload.url, 'HEAD', alice.token);
      return Number(res.headers.get('upload-offset')) > 0 ? res : null;
    });
    expect(head.status).to.equal(200);
    expect(head.headers.get('tus-resumable')).to.equal('1.0.0');
    expect(head.headers.get('upload-length')).to.equal(String(bytes.length));
    expect(head.headers.get('cache-control')).to.equal('no-store');
    const offset = Number(head.headers.get('upload-offset'));
    expect(offset).to.be.at.most(Math.floor(half / 3));
    expect((await asset(created.id)).upload_file_state).to.equal('in_progress');

    // The real client resumes from the server's offset, in small chunks.
    const sent = await tusSend(upload.url, alice.token, bytes, { chunkSize: 64 });
    expect(sent.chunks).to.equal(Math.ceil((bytes.length - offset) / 64));

    const done = await asset(created.id);
    expect(done).to.deep.include({ upload_file_state: 'success', mime_type: 'image/png', url: `/assets/${created.id}/file`, import_error: null });
    expect(readFileSync(storedFile(stack.config, org, created.id)).equals(bytes)).to.equal(true);
    expectNoStagedBytes(stack.config, upload.id);
    expect(await uploadRow(upload.id)).to.deep.include({ state: 'completed', sha256: sha256(bytes), error: null });
    const enriched = await eventually('enrichment finished', async () => {
      const row = await asset(created.id);
      return row.enrichment_state === 'success' ? row : null;
    });
    expect(enriched.enrichment).to.deep.include({ size: bytes.length, checksum: { algorithm: 'sha256', value: sha256(bytes) }, width: 40, height: 30 });
    const status = await stack.server.request('get', `/asset-uploads/${upload.id}`, { token: alice.token });
    expect(status.status).to.equal(200);
    expect(status.body).to.deep.include({ state: 'completed', offset: bytes.length, size: bytes.length, error: null });
    expect(await stack.db('activity_events').where({ subject_id: created.id }).orderBy('created_at').pluck('action')).to.deep.equal([
      'asset.upload_started',
      'asset.uploaded',
      'asset.enriched',
    ]);
    // The event log (issue 23): the upload's end and the enrichment, each with the asset as the API presents it.
    const events = await stack.db('events').where({ subject_id: created.id }).orderBy('seq').select('type', 'data');
    expect(events.map((event: { type: string }) => event.type)).to.deep.equal(['asset.upload.succeeded', 'asset.enriched']);
    expect(events[0].data.object).to.deep.include({ id: created.id, upload_file_state: 'success' });
    // A completed upload takes no more bytes.
    const again = await tusRequest(
      upload.url,
      'PATCH',
      alice.token,
      { 'upload-offset': String(bytes.length), 'content-type': 'application/offset+octet-stream' },
      Buffer.alloc(0),
    );
    expect(again.status).to.equal(409);
    expect(again.body.code).to.equal('conflict');
  });

  it('a checksum that does not match ends the asset in error with the reason, and keeps no bytes', async () => {
    const bytes = Buffer.from('hello, world\n'.repeat(100));
    const { asset: created, upload } = await start({ filename: 'notes.txt', mime_type: 'text/plain', size: bytes.length, checksum_sha256: '0'.repeat(64) });
    const error = await tusSend(upload.url, alice.token, bytes).then(
      () => expect.fail('the upload should be refused'),
      (e: unknown) => e,
    );
    const { status, body } = failedStatus(error);
    expect(status).to.equal(422);
    expect(body.code).to.equal('validation_failed');
    expect(body.message).to.contain(`checksum_sha256: the bytes hash to ${sha256(bytes)}`);
    const row = await asset(created.id);
    expect(row).to.deep.include({ upload_file_state: 'error', enrichment_state: null, url: null });
    expect(row.import_error.code).to.equal('checksum_mismatch');
    const events = await stack.db('events').where({ subject_id: created.id }).select('type', 'data');
    expect(events.map((event: { type: string }) => event.type)).to.deep.equal(['asset.upload.failed']);
    expect(events[0].data.object).to.deep.include({ id: created.id, upload_file_state: 'error' });
    expectNoStagedBytes(stack.config, upload.id);
    expect(existsSync(storedFile(stack.config, org, created.id))).to.equal(false);
  });

  it('bytes that are not the declared type end in error: a PDF declared as PNG, binary declared as text', async () => {
    const pdf = Buffer.from('%PDF-1.4\n1 0 obj <<>> endobj\ntrailer <<>>\n%%EOF\n');
    const first = await start({ filename: 'photo.png', mime_type: 'image/png', size: pdf.length });
    expect(failedStatus(await tusSend(first.upload.url, alice.token, pdf).catch((e) => e)).status).to.equal(422);
    const wrongType = await asset(first.asset.id);
    expect(wrongType.upload_file_state).to.equal('error');
    expect(wrongType.import_error).to.deep.equal({ code: 'type_mismatch', message: 'mime_type: the bytes are application/pdf, not the declared image/png' });
    expectNoStagedBytes(stack.config, first.upload.id);

    const binary = Buffer.from([0x68, 0x69, 0xff, 0xfe, 0x00, 0x01]);
    const second = await start({ filename: 'notes.txt', mime_type: 'text/plain', size: binary.length });
    expect(failedStatus(await tusSend(second.upload.url, alice.token, binary).catch((e) => e)).status).to.equal(422);
    expect((await asset(second.asset.id)).import_error).to.deep.equal({ code: 'invalid_text', message: 'mime_type: the bytes are not valid utf-8 text' });
    expectNoStagedBytes(stack.config, second.upload.id);

    // Text in the charset it declares is text.
    const latin = Buffer.from('caf\xe9 cr\xe8me', 'latin1');
    const third = await start({ filename: 'menu.txt', mime_type: 'text/plain; charset=iso-8859-1', size: latin.length });
    await tusSend(third.upload.url, alice.token, latin);
    expect((await asset(third.asset.id)).upload_file_state).to.equal('success');
  });

  it('refuses a file over the size limit (413) and an organization over its storage limit (409) before a byte is sent', async () => {
    const own = await createOrganization(stack.server, alice);
    const tooLarge = await createUploadFor(stack.server, alice, {
      organization_id: own,
      filename: 'big.bin.png',
      mime_type: 'image/png',
      size: 4 * 1024 * 1024 + 1,
    });
    expect(tooLarge.status).to.equal(413);
    expect(tooLarge.body).to.deep.include({ code: 'validation_failed' });
    expect(tooLarge.body.data.issues[0].path).to.deep.equal(['size']);
    await start({ filename: 'a.png', mime_type: 'image/png', size: 4 * 1024 * 1024 }, own);
    const over = await createUploadFor(stack.server, alice, { organization_id: own, filename: 'b.png', mime_type: 'image/png', size: 3 * 1024 * 1024 });
    expect(over.status).to.equal(409);
    expect(over.body.code).to.equal('conflict');
    expect(over.body.message).to.contain('the organization holds 4194304 of its 6291456 bytes');
    expect(await stack.db('assets').where({ organization_id: own }).count('* as n').first()).to.deep.equal({ n: 1 });
    // SVG is never an asset; a caller without resources.create cannot start one.
    const svg = await createUploadFor(stack.server, alice, { organization_id: own, filename: 'x.svg', mime_type: 'image/svg+xml', size: 10 });
    expect(svg.status).to.equal(400);
    expect(svg.body.data.issues[0].path).to.deep.equal(['mime_type']);
    const stranger = newUser();
    expect((await createUploadFor(stack.server, stranger, { organization_id: own, filename: 'a.png', mime_type: 'image/png', size: 1 })).status).to.equal(403);
  });

  it('someone else’s upload URL is 404 to them, whatever the method, and the upload stays untouched', async () => {
    const bob = newUser();
    await addMember(stack.db, org, bob, 'admin');
    const bytes = noise(1000);
    const { upload } = await start({ filename: 'x.mp3', mime_type: 'audio/mpeg', size: bytes.length });
    for (const [method, headers, body] of [
      ['HEAD', {}, undefined],
      ['PATCH', { 'upload-offset': '0', 'content-type': 'application/offset+octet-stream' }, bytes],
      ['DELETE', {}, undefined],
    ] as const) {
      const res = await tusRequest(upload.url, method, bob.token, headers, body);
      expect(res.status, method).to.equal(404);
      if (method !== 'HEAD') expect(res.body).to.deep.equal({ code: 'not_found', message: 'upload not found', data: { issues: [] } });
      expect(res.headers.get('tus-resumable')).to.equal('1.0.0');
    }
    const error = await tusSend(upload.url, bob.token, bytes).catch((e) => e);
    expect(failedStatus(error).status).to.equal(404);
    expect((await uploadRow(upload.id)).state).to.equal('in_progress');
    expect(Number((await tusRequest(upload.url, 'HEAD', alice.token)).headers.get('upload-offset'))).to.equal(0);
  });

  it('a deleted asset ends its upload: the next PATCH is 410 with the reason, and no bytes are left', async () => {
    const bytes = noise(4000);
    const { asset: created, upload } = await start({ filename: 'clip.mp4', mime_type: 'video/mp4', size: bytes.length });
    const first = await tusRequest(
      upload.url,
      'PATCH',
      alice.token,
      { 'upload-offset': '0', 'content-type': 'application/offset+octet-stream' },
      bytes.subarray(0, 1000),
    );
    expect(first.status).to.equal(204);
    expect(first.headers.get('upload-offset')).to.equal('1000');
    expect((await stack.server.request('delete', `/assets/${created.id}`, { token: alice.token })).status).to.equal(204);
    const next = await tusRequest(
      upload.url,
      'PATCH',
      alice.token,
      { 'upload-offset': '1000', 'content-type': 'application/offset+octet-stream' },
      bytes.subarray(1000),
    );
    expect(next.status).to.equal(410);
    expect(next.body).to.deep.include({ code: 'not_found', message: 'the upload is canceled: the asset was deleted during its upload' });
    expect(await uploadRow(upload.id)).to.deep.include({
      state: 'canceled',
      error: { code: 'asset_deleted', message: 'the asset was deleted during its upload' },
    });
    expect((await stack.db('assets').where({ id: created.id }).first()).upload_file_state).to.equal('error');
    expectNoStagedBytes(stack.config, upload.id);
  });

  it('an expired upload is 410 to the client, and the cleanup job ends the ones nobody touches and removes their bytes', async () => {
    const bytes = noise(3000);
    const touched = await start({ filename: 'a.wav', mime_type: 'audio/wav', size: bytes.length });
    const untouched = await start({ filename: 'b.wav', mime_type: 'audio/wav', size: bytes.length });
    await tusRequest(
      untouched.upload.url,
      'PATCH',
      alice.token,
      { 'upload-offset': '0', 'content-type': 'application/offset+octet-stream' },
      bytes.subarray(0, 500),
    );
    await stack
      .db('asset_uploads')
      .whereIn('id', [touched.upload.id, untouched.upload.id])
      .update({ expires_at: stack.db.raw(`now() - interval '1 second'`) });

    // The client's HEAD learns it is gone (410); a PATCH is told why.
    expect(failedStatus(await tusSend(touched.upload.url, alice.token, bytes).catch((e) => e)).status).to.equal(410);
    const { status, body } = await tusRequest(
      touched.upload.url,
      'PATCH',
      alice.token,
      { 'upload-offset': '0', 'content-type': 'application/offset+octet-stream' },
      bytes,
    );
    expect(status).to.equal(410);
    expect(body.code).to.equal('not_found');
    expect(body.message).to.match(/^the upload is expired: the upload was not finished by /);
    expectNoStagedBytes(stack.config, touched.upload.id);

    const boss = createBoss(stack.databaseUrl, 'web');
    await boss.start();
    try {
      await stack.db.transaction((trx) => new JobQueue(boss).enqueue(trx, cleanUpUploadsJob, {}, { organizationId: null }));
    } finally {
      await boss.stop({ graceful: false, close: true });
    }
    await eventually('the cleanup job ended the untouched upload', async () => (await uploadRow(untouched.upload.id)).state === 'expired');
    expect((await uploadRow(untouched.upload.id)).error.code).to.equal('upload_expired');
    await eventually('its bytes were removed', async () => (await uploadRow(untouched.upload.id)).staging_removed_at !== null);
    expectNoStagedBytes(stack.config, untouched.upload.id);
    const ended = await asset(untouched.asset.id);
    expect(ended.upload_file_state).to.equal('error');
    expect(ended.import_error.code).to.equal('upload_expired');
  });

  it('terminates on DELETE (tus termination), and refuses a request whose Upload-Checksum does not match (460) keeping none of it', async () => {
    const bytes = noise(2048);
    const { asset: created, upload } = await start({ filename: 'c.mp3', mime_type: 'audio/mpeg', size: bytes.length });
    const bad = await tusRequest(
      upload.url,
      'PATCH',
      alice.token,
      { 'upload-offset': '0', 'content-type': 'application/offset+octet-stream', 'upload-checksum': `sha256 ${Buffer.alloc(32).toString('base64')}` },
      bytes.subarray(0, 1024),
    );
    expect(bad.status).to.equal(460);
    expect(bad.body.data.issues[0].path).to.deep.equal(['Upload-Checksum']);
    expect((await tusRequest(upload.url, 'HEAD', alice.token)).headers.get('upload-offset')).to.equal('0');
    const good = await tusRequest(
      upload.url,
      'PATCH',
      alice.token,
      {
        'upload-offset': '0',
        'content-type': 'application/offset+octet-stream',
        'upload-checksum': `sha256 ${Buffer.from(sha256(bytes.subarray(0, 1024)), 'hex').toString('base64')}`,
      },
      bytes.subarray(0, 1024),
    );
    expect(good.status).to.equal(204);
    expect(good.headers.get('upload-offset')).to.equal('1024');

    const terminated = await tusRequest(upload.url, 'DELETE', alice.token);
    expect(terminated.status).to.equal(204);
    expect((await tusRequest(upload.url, 'DELETE', alice.token)).status).to.equal(204);
    expect((await tusRequest(upload.url, 'HEAD', alice.token)).status).to.equal(410);
    expect((await asset(created.id)).import_error).to.deep.equal({ code: 'upload_canceled', message: 'the uploader terminated the upload' });
    expectNoStagedBytes(stack.config, upload.id);
  });

  it('answers a PATCH without the tus headers with the JSON Error body naming the header', async () => {
    const { upload } = await start({ filename: 'd.mp3', mime_type: 'audio/mpeg', size: 10 });
    const res = await fetch(upload.url, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${alice.token}`, 'content-type': 'application/offset+octet-stream' },
      body: 'x',
    });
    expect(res.status).to.equal(400);
    const body = (await res.json()) as { code: string; data: { issues: { path: string[] }[] } };
    expect(body.code).to.equal('validation_failed');
    expect(body.data.issues[0]?.path).to.deep.equal(['tus-resumable']);
    const wrongOffset = await tusRequest(
      upload.url,
      'PATCH',
      alice.token,
      { 'upload-offset': '5', 'content-type': 'application/offset+octet-stream' },
      Buffer.from('abc'),
    );
    expect(wrongOffset.status).to.equal(409);
    expect(wrongOffset.body.data.issues[0].path).to.deep.equal(['Upload-Offset']);
  });
});
