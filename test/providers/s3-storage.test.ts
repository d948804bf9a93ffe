import { expect } from 'chai';
import { S3Storage } from '../../src/providers/storage/s3.ts';
import { FAKE_S3_CREDENTIALS, startFakeS3, type FakeS3 } from '../support/fake-s3.ts';

describe('S3-compatible storage adapter', () => {
  let s3: FakeS3;
  let storage: S3Storage;
  before(async () => {
    s3 = await startFakeS3();
    storage = new S3Storage({ endpoint: s3.endpoint, bucket: s3.bucket, region: 'us-east-1', ...FAKE_S3_CREDENTIALS });
  });
  after(async () => s3.close());

  it('puts, gets and deletes objects with SigV4-signed path-style requests', async () => {
    const body = Buffer.from([0, 1, 2, 250, 255]);
    expect(await storage.put('organizations/org-1/logo/a', body, 'image/png')).to.deep.equal({
      key: 'organizations/org-1/logo/a',
      size: 5,
      contentType: 'image/png',
    });
    expect(s3.objects.get('organizations/org-1/logo/a')).to.deep.equal({ body, contentType: 'image/png' });
    expect(await storage.get('organizations/org-1/logo/a')).to.deep.equal({ body, contentType: 'image/png' });
    await storage.delete('organizations/org-1/logo/a');
    expect(s3.objects.has('organizations/org-1/logo/a')).to.equal(false);
    expect(s3.requests.map((r) => [r.method, r.path, r.signed])).to.deep.equal([
      ['PUT', '/test-bucket/organizations/org-1/logo/a', true],
      ['GET', '/test-bucket/organizations/org-1/logo/a', true],
      ['DELETE', '/test-bucket/organizations/org-1/logo/a', true],
    ]);
  });

  it('answers null for a missing object and treats deleting one as done', async () => {
    expect(await storage.get('nope/missing')).to.equal(null);
    await storage.delete('nope/missing');
  });

  it('fails loudly when the store refuses the signature', async () => {
    const wrong = new S3Storage({
      endpoint: s3.endpoint,
      bucket: s3.bucket,
      region: 'us-east-1',
      accessKeyId: FAKE_S3_CREDENTIALS.accessKeyId,
      secretAccessKey: 'not-the-secret',
    });
    let error: Error | undefined;
    await wrong.put('k', Buffer.from('x'), 'image/png').catch((e: Error) => (error = e));
    expect(error?.message).to.match(/^object storage PUT k failed with HTTP 403: .*SignatureDoesNotMatch/);
    expect(s3.objects.has('k')).to.equal(false);
  });
});
