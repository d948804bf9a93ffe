import { expect } from 'chai';
import { png } from '../assets/helpers.ts';
import { eventually } from '../support/eventually.ts';
import { FAKE_S3_CREDENTIALS, type FakeS3, startFakeS3 } from '../support/fake-s3.ts';
import { createOrganization } from '../support/organizations.ts';
import { newUser, type TestUser } from '../support/server.ts';
import { createUploadFor, noise, startUploadStack, tusSend, type UploadStack } from './support.ts';

type Get = (headers: Record<string, string>) => Promise<Response>;

/**
 * RFC 9110 §14 on a route that serves ranges: one satisfiable range is 206 with its exact
 * Content-Range and bytes; none satisfiable is 416 with `bytes *\/size`; an invalid header
 * (`bytes=5-1`, another unit, garbage) and a set of several ranges get the whole body (200).
 */
async function expectRanges(get: Get, bytes: Buffer): Promise<void> {
  const size = bytes.length;
  const partial: [string, number, number][] = [
    ['bytes=0-0', 0, 0],
    ['bytes=100-199', 100, 199],
    ['bytes=100-', 100, size - 1],
    ['bytes=-10', size - 10, size - 1],
    [`bytes=-${size * 10}`, 0, size - 1], // a suffix longer than the file is the whole file, as a 206
    [`bytes=${size - 5}-${size * 100}`, size - 5, size - 1], // a last-pos past the end is clamped
    ['bytes=99999999999999999999-,5-9', 5, 9], // the one satisfiable range of a set is served
    [' bytes = 7-8 ', 7, 8],
  ];
  for (const [range, start, end] of partial) {
    const res = await get({ range });
    expect(res.status, range).to.equal(206);
    expect(res.headers.get('content-range'), range).to.equal(`bytes ${start}-${end}/${size}`);
    expect(res.headers.get('content-length'), range).to.equal(String(end - start + 1));
    expect(Buffer.from(await res.arrayBuffer()).equals(bytes.subarray(start, end + 1)), range).to.equal(true);
  }
  for (const range of [`bytes=${size}-`, `bytes=${size}-${size + 10}`, 'bytes=-0', `bytes=${size}-,${size + 1}-`, 'bytes=99999999999999999999-']) {
    const res = await get({ range });
    expect(res.status, range).to.equal(416);
    expect(res.headers.get('content-range'), range).to.equal(`bytes */${size}`);
    expect(((await res.json()) as { code: string }).code, range).to.equal('validation_failed');
  }
  for (const range of [
    'bytes=5-1',
    'bytes=-',
    'bytes=',
    'bytes=a-b',
    'bytes=1-2-3',
    'items=0-5',
    'garbage',
    'bytes=0-1,5-1',
    'bytes=0-9,20-29',
    'bytes=0-0,-1',
  ]) {
    const res = await get({ range });
    expect(res.status, range).to.equal(200);
    expect(res.headers.get('content-range'), range).to.equal(null);
    expect(Buffer.from(await res.arrayBuffer()).equals(bytes), range).to.equal(true);
  }
}

/** Routes that answer stored bytes without ranges: any Range header is ignored (200, the whole body). */
async function expectRangeIgnored(get: Get): Promise<void> {
  const whole = Buffer.from(await (await get({})).arrayBuffer());
  expect(whole.length).to.be.greaterThan(0);
  for (const range of ['bytes=0-3', 'bytes=5-1', 'bytes=-1', `bytes=${whole.length}-`, 'garbage']) {
    const res = await get({ range });
    expect(res.status, range).to.equal(200);
    expect(Buffer.from(await res.arrayBuffer()).equals(whole), range).to.equal(true);
  }
}

describe('byte ranges on every download route (RFC 9110)', function () {
  this.timeout(90_000);

  for (const storage of ['local', 's3'] as const) {
    describe(`${storage} storage`, () => {
      let s3: FakeS3 | undefined;
      let stack: UploadStack;
      let alice: TestUser;
      let org: string;

      before(async () => {
        s3 = storage === 's3' ? await startFakeS3() : undefined;
        stack = await startUploadStack(
          s3
            ? {
                STORAGE_S3_ENDPOINT: s3.endpoint,
                STORAGE_S3_BUCKET: s3.bucket,
                STORAGE_S3_ACCESS_KEY_ID: FAKE_S3_CREDENTIALS.accessKeyId,
                STORAGE_S3_SECRET_ACCESS_KEY: FAKE_S3_CREDENTIALS.secretAccessKey,
              }
            : {},
        );
        alice = newUser();
        org = await createOrganization(stack.server, alice);
      });
      after(async () => {
        await stack?.stop();
        await s3?.close();
      });

      const uploaded = async (bytes: Buffer, filename: string, mime_type: string) => {
        const res = await createUploadFor(stack.server, alice, { organization_id: org, filename, mime_type, size: bytes.length });
        expect(res.status, JSON.stringify(res.body)).to.equal(201);
        await tusSend(res.body.upload.url, alice.token, bytes);
        return res.body.asset.id as string;
      };
      const withToken = (path: string) => (headers: Record<string, string>) =>
        fetch(`${stack.server.url}${path}`, { headers: { authorization: `Bearer ${alice.token}`, ...headers } });

      it('GET /assets/{asset_id}/file (with a token)', async () => {
        const bytes = Buffer.concat([png(2, 2), noise(5000)]);
        const id = await uploaded(bytes, 'photo.png', 'image/png');
        await expectRanges(withToken(`/assets/${id}/file`), bytes);
      });

      if (storage === 'local') {
        it('GET /asset-files/{asset_id} (a signed URL, no token)', async () => {
          const bytes = Buffer.from('take one\n'.repeat(500));
          const id = await uploaded(bytes, 'take.txt', 'text/plain');
          const signed = await stack.server.request('post', `/assets/${id}/download-url`, { token: alice.token, body: {} });
          expect(signed.status, JSON.stringify(signed.body)).to.equal(200);
          await expectRanges((headers) => fetch(signed.body.url, { headers }), bytes);
        });

        it('GET /assets/{asset_id}/thumbnails/{size} and GET /organizations/{organization_id}/logo ignore Range', async () => {
          const id = await uploaded(png(40, 30), 'small.png', 'image/png');
          await eventually('thumbnails made', async () => {
            const res = await stack.server.request('get', `/assets/${id}`, { token: alice.token });
            return res.body.enrichment_state === 'success' ? res.body : null;
          });
          await expectRangeIgnored(withToken(`/assets/${id}/thumbnails/256`));
          const logo = await stack.server.request('put', `/organizations/${org}/logo`, {
            token: alice.token,
            body: { content_type: 'image/png', data: png(8, 8).toString('base64') },
          });
          expect(logo.status, JSON.stringify(logo.body)).to.equal(200);
          await expectRangeIgnored(withToken(`/organizations/${org}/logo`));
        });
      }
    });
  }
});
