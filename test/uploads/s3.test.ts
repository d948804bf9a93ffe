import { expect } from 'chai';
import { assetFileKey } from '../../src/assets/presenter.ts';
import { png } from '../assets/helpers.ts';
import { eventually } from '../support/eventually.ts';
import { FAKE_S3_CREDENTIALS, type FakeS3, startFakeS3 } from '../support/fake-s3.ts';
import { createOrganization } from '../support/organizations.ts';
import { newUser, type TestUser } from '../support/server.ts';
import { createUploadFor, failedStatus, noise, patchAndKill, sha256, startUploadStack, tusRequest, tusSend, type UploadStack } from './support.ts';

/** The same flows on object storage: the tus S3 store (multipart uploads) against the SigV4-verifying fake, presigned downloads. */
describe('asset uploads (tus, S3 object storage)', function () {
  this.timeout(60_000);
  let s3: FakeS3;
  let stack: UploadStack;
  let alice: TestUser;
  let org: string;

  before(async () => {
    s3 = await startFakeS3();
    stack = await startUploadStack({
      STORAGE_S3_ENDPOINT: s3.endpoint,
      STORAGE_S3_BUCKET: s3.bucket,
      STORAGE_S3_ACCESS_KEY_ID: FAKE_S3_CREDENTIALS.accessKeyId,
      STORAGE_S3_SECRET_ACCESS_KEY: FAKE_S3_CREDENTIALS.secretAccessKey,
    });
    alice = newUser();
    org = await createOrganization(stack.server, alice);
  });
  after(async () => {
    await stack?.stop();
    await s3?.close();
  });

  const start = async (body: Record<string, unknown>) => {
    const res = await createUploadFor(stack.server, alice, { organization_id: org, ...body });
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    return res.body as { asset: any; upload: any };
  };
  const asset = async (id: string) => (await stack.server.request('get', `/assets/${id}`, { token: alice.token })).body;
  /** Nothing of the upload is left in the bucket: no object, no .info/.part, no open multipart upload. */
  const expectNoStagedObjects = (uploadId: string) => {
    expect([...s3.objects.keys()].filter((key) => key.startsWith(uploadId))).to.deep.equal([]);
    expect([...s3.multipartUploads.values()].filter((upload) => upload.key === uploadId)).to.deep.equal([]);
  };

  it('uploads in chunks, resumes after a killed connection, keeps the file in the bucket and enriches it; every request is signed', async () => {
    const bytes = Buffer.concat([png(20, 10), noise(6 * 1024 * 1024)]);
    const { asset: created, upload } = await start({ filename: 'big.png', mime_type: 'image/png', size: bytes.length, checksum_sha256: sha256(bytes) });
    await patchAndKill(upload.url, alice.token, 0, bytes.subarray(0, 3 * 1024 * 1024), 1024 * 1024);
    const head = await tusRequest(upload.url, 'HEAD', alice.token);
    expect(head.status).to.equal(200);
    const offset = Number(head.headers.get('upload-offset'));
    expect(offset).to.be.at.most(1024 * 1024);
    await tusSend(upload.url, alice.token, bytes, { chunkSize: 2 * 1024 * 1024 });

    const done = await asset(created.id);
    expect(done).to.deep.include({ upload_file_state: 'success', url: `/assets/${created.id}/file`, import_error: null });
    const stored = s3.objects.get(assetFileKey(org, created.id));
    expect(stored?.contentType).to.equal('image/png');
    expect(stored?.body.equals(bytes)).to.equal(true);
    expectNoStagedObjects(upload.id);
    const enriched = await eventually('enrichment finished', async () => {
      const row = await asset(created.id);
      return row.enrichment_state === 'success' ? row : null;
    });
    expect(enriched.enrichment).to.deep.include({ size: bytes.length, width: 20, height: 10 });
    expect(s3.requests.filter((r) => !r.signed)).to.deep.equal([]);

    // Range and ETag through the bucket.
    const part = await fetch(`${stack.server.url}/assets/${created.id}/file`, { headers: { authorization: `Bearer ${alice.token}`, range: 'bytes=10-19' } });
    expect(part.status).to.equal(206);
    expect(part.headers.get('content-range')).to.equal(`bytes 10-19/${bytes.length}`);
    expect(part.headers.get('etag')).to.equal(`"${sha256(bytes)}"`);
    expect(Buffer.from(await part.arrayBuffer()).equals(bytes.subarray(10, 20))).to.equal(true);
  });

  it('hands out a presigned GET that the bucket serves without a token, and refuses once it expired', async () => {
    const bytes = Buffer.from('plain words\n'.repeat(50));
    const { asset: created, upload } = await start({ filename: 'words.txt', mime_type: 'text/plain', size: bytes.length });
    await tusSend(upload.url, alice.token, bytes);
    const res = await stack.server.request('post', `/assets/${created.id}/download-url`, { token: alice.token, body: { disposition: 'attachment' } });
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    const url = new URL(res.body.url);
    expect(url.origin).to.equal(s3.endpoint);
    expect(url.searchParams.get('X-Amz-Expires')).to.equal('300');
    const got = await fetch(url);
    expect(got.status).to.equal(200);
    expect(got.headers.get('content-disposition')).to.match(/^attachment; filename="words.txt"/);
    expect(Buffer.from(await got.arrayBuffer()).equals(bytes)).to.equal(true);
    const tampered = new URL(url);
    tampered.searchParams.set('response-content-disposition', 'inline');
    expect((await fetch(tampered)).status).to.equal(403);

    const short = await stack.server.request('post', `/assets/${created.id}/download-url`, { token: alice.token, body: { expires_in: 1 } });
    await new Promise((resolve) => setTimeout(resolve, 2100));
    expect((await fetch(short.body.url)).status).to.equal(403);
  });

  it('a bad checksum, a mismatched type and a terminated upload leave nothing in the bucket', async () => {
    const bytes = noise(3000);
    const bad = await start({ filename: 'a.png', mime_type: 'image/png', size: bytes.length, checksum_sha256: sha256(bytes) });
    const refused = failedStatus(await tusSend(bad.upload.url, alice.token, bytes).catch((e) => e));
    expect(refused.status).to.equal(422);
    expect((await asset(bad.asset.id)).import_error.code).to.equal('type_mismatch');
    expectNoStagedObjects(bad.upload.id);
    expect(s3.objects.has(assetFileKey(org, bad.asset.id))).to.equal(false);

    const text = Buffer.from('hello');
    const wrong = await start({ filename: 'b.txt', mime_type: 'text/plain', size: text.length, checksum_sha256: '1'.repeat(64) });
    expect(failedStatus(await tusSend(wrong.upload.url, alice.token, text).catch((e) => e)).status).to.equal(422);
    expect((await asset(wrong.asset.id)).import_error.code).to.equal('checksum_mismatch');
    expectNoStagedObjects(wrong.upload.id);

    const halfway = await start({ filename: 'c.txt', mime_type: 'text/plain', size: 10 });
    await tusRequest(
      halfway.upload.url,
      'PATCH',
      alice.token,
      { 'upload-offset': '0', 'content-type': 'application/offset+octet-stream' },
      Buffer.from('hello'),
    );
    expect((await tusRequest(halfway.upload.url, 'DELETE', alice.token)).status).to.equal(204);
    expectNoStagedObjects(halfway.upload.id);
  });
});
