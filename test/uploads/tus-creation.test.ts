import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import * as tus from 'tus-js-client';
import { png } from '../assets/helpers.ts';
import { addMember, createOrganization } from '../support/organizations.ts';
import { newUser, type TestUser } from '../support/server.ts';
import { expectNoStagedBytes, failedStatus, noise, sha256, startUploadStack, storedFile, type UploadStack } from './support.ts';

const b64 = (value: string) => Buffer.from(value, 'utf8').toString('base64');
const metadataHeader = (metadata: Record<string, string>) =>
  Object.entries(metadata)
    .map(([key, value]) => `${key} ${b64(value)}`)
    .join(',');

/** tus discovery (OPTIONS) and creation (POST /asset-uploads, with and without a body), by the real tus client and raw HTTP. */
describe('asset uploads: tus discovery and creation', function () {
  this.timeout(60_000);
  let stack: UploadStack;
  let alice: TestUser;
  let org: string;
  let endpoint: string;

  before(async () => {
    stack = await startUploadStack({ UPLOAD_MAX_FILE_BYTES: String(2 * 1024 * 1024), UPLOAD_ORGANIZATION_LIMIT_BYTES: String(3 * 1024 * 1024) });
    alice = newUser();
    org = await createOrganization(stack.server, alice);
    endpoint = `${stack.server.url}/asset-uploads`;
  });
  after(async () => stack?.stop());

  /** The real tus client, given the endpoint: creation, then PATCHes (or the first bytes with the creation). */
  const tusUpload = (bytes: Buffer, metadata: Record<string, string>, options: Partial<tus.UploadOptions> = {}) =>
    new Promise<{ url: string; chunks: number }>((resolve, reject) => {
      let chunks = 0;
      const upload = new tus.Upload(bytes, {
        endpoint,
        metadata,
        headers: { authorization: `Bearer ${alice.token}` },
        retryDelays: null,
        storeFingerprintForResuming: false,
        onChunkComplete: () => {
          chunks++;
        },
        onSuccess: () => resolve({ url: upload.url!, chunks }),
        onError: reject,
        ...options,
      });
      upload.start();
    });
  const create = (headers: Record<string, string>, body?: Buffer) =>
    fetch(endpoint, {
      method: 'POST',
      headers: { authorization: `Bearer ${alice.token}`, 'tus-resumable': '1.0.0', ...headers },
      ...(body && { body }),
    }).then(async (res) => ({ status: res.status, headers: res.headers, body: (await res.json().catch(() => undefined)) as any }));
  const uploadOf = (url: string) =>
    stack
      .db('asset_uploads')
      .where({ id: url.split('/').pop() })
      .first();

  it('answers OPTIONS with what it supports, exactly, without a token', async () => {
    const res = await fetch(endpoint, { method: 'OPTIONS' });
    expect(res.status).to.equal(204);
    expect(res.headers.get('tus-version')).to.equal('1.0.0');
    expect(res.headers.get('tus-resumable')).to.equal('1.0.0');
    expect(res.headers.get('tus-extension')).to.equal('creation,creation-with-upload,termination,checksum,expiration');
    expect(res.headers.get('tus-max-size')).to.equal(String(2 * 1024 * 1024));
    expect(res.headers.get('tus-checksum-algorithm')).to.equal('sha256');
    expect(await res.text()).to.equal('');
  });

  it('creates the upload and its asset from the tus client’s POST, then takes its PATCHes to success', async () => {
    const bytes = Buffer.concat([png(20, 10), noise(50_000)]);
    const sent = await tusUpload(
      bytes,
      { organization_id: org, filename: 'façade.png', filetype: 'image/png', title: 'The façade', checksum_sha256: sha256(bytes), name: 'ignored' },
      { chunkSize: 16_384 },
    );
    expect(sent.chunks).to.equal(Math.ceil(bytes.length / 16_384));
    expect(sent.url).to.match(new RegExp(`^${stack.server.url}/asset-uploads/[0-9a-f]{32}$`));
    const upload = await uploadOf(sent.url);
    expect(upload).to.deep.include({ organization_id: org, filename: 'façade.png', mime_type: 'image/png', state: 'completed', sha256: sha256(bytes) });
    expect(Number(upload.size)).to.equal(bytes.length);
    const asset = (await stack.server.request('get', `/assets/${upload.asset_id}`, { token: alice.token })).body;
    expect(asset).to.deep.include({ title: 'The façade', type: 'image', upload_file_state: 'success' });
    expect(readFileSync(storedFile(stack.config, org, upload.asset_id)).equals(bytes)).to.equal(true);
    expectNoStagedBytes(stack.config, upload.id);
  });

  it('takes the first bytes with the creation (creation-with-upload), from the tus client and raw', async () => {
    const bytes = Buffer.concat([png(4, 4), noise(40_000, 5)]);
    const sent = await tusUpload(
      bytes,
      { organization_id: org, filename: 'a.png', filetype: 'image/png' },
      { chunkSize: 25_000, uploadDataDuringCreation: true },
    );
    // The POST carried the first chunk, one PATCH the rest.
    expect(sent.chunks).to.equal(2);
    expect((await uploadOf(sent.url)).state).to.equal('completed');

    // The whole file in the POST: created, verified and kept before the 201.
    const whole = Buffer.from('one line\nanother line\n');
    const res = await create(
      {
        'upload-length': String(whole.length),
        'upload-metadata': metadataHeader({ organization_id: org, filename: 'notes.txt', filetype: 'text/plain' }),
        'content-type': 'application/offset+octet-stream',
      },
      whole,
    );
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    expect(res.headers.get('location')).to.equal(res.body.upload.url);
    expect(res.headers.get('upload-offset')).to.equal(String(whole.length));
    expect(res.headers.get('upload-expires')).to.equal(null);
    expect(res.body.upload).to.deep.include({ offset: whole.length, state: 'completed', size: whole.length });
    expect(res.body.asset).to.deep.include({ title: 'notes.txt', upload_file_state: 'in_progress' });
    const asset = (await stack.server.request('get', `/assets/${res.body.asset.id}`, { token: alice.token })).body;
    expect(asset.upload_file_state).to.equal('success');

    // Part of the file: the 201 says how much was kept; the rest follows by PATCH.
    const part = await create(
      {
        'upload-length': String(bytes.length),
        'upload-metadata': metadataHeader({ organization_id: org, filename: 'b.png', filetype: 'image/png' }),
        'content-type': 'application/offset+octet-stream',
      },
      bytes.subarray(0, 1000),
    );
    expect(part.status).to.equal(201);
    expect(part.headers.get('upload-offset')).to.equal('1000');
    expect(part.headers.get('upload-expires')).to.not.equal(null);
    expect(part.body.upload).to.deep.include({ offset: 1000, state: 'in_progress' });
  });

  it('a body that fails its checks is 422 with the upload still named in Location; a creation without a body is offset 0', async () => {
    const pdf = Buffer.from('%PDF-1.4\n%%EOF\n');
    const res = await create(
      {
        'upload-length': String(pdf.length),
        'upload-metadata': metadataHeader({ organization_id: org, filename: 'x.png', filetype: 'image/png' }),
        'content-type': 'application/offset+octet-stream',
      },
      pdf,
    );
    expect(res.status).to.equal(422);
    expect(res.body.message).to.equal('the upload failed its checks: mime_type: the bytes are application/pdf, not the declared image/png');
    const upload = await uploadOf(res.headers.get('location')!);
    expect(upload.state).to.equal('failed');
    expectNoStagedBytes(stack.config, upload.id);

    const empty = await create({
      'upload-length': '10',
      'upload-metadata': metadataHeader({ organization_id: org, filename: 'y.mp3', filetype: 'audio/mpeg' }),
    });
    expect(empty.status).to.equal(201);
    expect(empty.headers.get('upload-offset')).to.equal('0');
    expect(empty.headers.get('tus-resumable')).to.equal('1.0.0');
  });

  it('refuses what POST /assets/uploads refuses, naming the header and key at fault', async () => {
    const valid = { organization_id: org, filename: 'z.png', filetype: 'image/png' };
    const refused = async (headers: Record<string, string>, tusHeaders = true) => {
      const res = await create(headers);
      // A header missing or malformed is refused by the operation's schema, before the tus side answers.
      expect(res.headers.get('tus-resumable')).to.equal(tusHeaders ? '1.0.0' : null);
      return { status: res.status, code: res.body.code, message: res.body.message, path: res.body.data.issues[0]?.path };
    };
    const { filetype: _filetype, ...withoutType } = valid;
    expect(await refused({ 'upload-length': '10', 'upload-metadata': metadataHeader(withoutType) })).to.deep.include({
      status: 400,
      code: 'validation_failed',
      path: ['Upload-Metadata', 'filetype'],
    });
    expect(await refused({ 'upload-length': '10', 'upload-metadata': metadataHeader({ ...valid, filetype: 'image/svg+xml' }) })).to.deep.include({
      status: 400,
      path: ['Upload-Metadata', 'filetype'],
    });
    expect(await refused({ 'upload-length': '10', 'upload-metadata': metadataHeader({ ...valid, filename: 'a/b.png' }) })).to.deep.include({
      status: 400,
      message: 'Upload-Metadata.filename: must be a file name without a path',
    });
    expect(await refused({ 'upload-length': '10', 'upload-metadata': `organization_id ${b64(org)},filename !!!` })).to.deep.include({
      status: 400,
      path: ['Upload-Metadata', 'filename'],
    });
    expect(await refused({ 'upload-length': '10', 'upload-metadata': metadataHeader({ ...valid, organization_id: 'a\0b' }) })).to.deep.include({
      status: 400,
      message: 'Upload-Metadata.organization_id: must not contain the NUL character (U+0000)',
    });
    expect(await refused({ 'upload-metadata': metadataHeader(valid) }, false)).to.deep.include({ status: 400, path: ['upload-length'] });
    expect(await refused({ 'upload-defer-length': '1', 'upload-length': '1', 'upload-metadata': metadataHeader(valid) })).to.deep.include({
      status: 400,
      path: ['Upload-Defer-Length'],
    });
    const tooLarge = await refused({ 'upload-length': String(2 * 1024 * 1024 + 1), 'upload-metadata': metadataHeader(valid) });
    expect(tooLarge).to.deep.include({ status: 413, code: 'validation_failed', path: ['Upload-Length'] });
    expect(tooLarge.message).to.match(/^Upload-Length: 2097153 bytes is over the largest file/);

    // The organization's limit (3 MiB) after 2 MiB of it is reserved.
    const own = await createOrganization(stack.server, alice);
    expect((await create({ 'upload-length': String(2 * 1024 * 1024), 'upload-metadata': metadataHeader({ ...valid, organization_id: own }) })).status).to.equal(
      201,
    );
    const over = await refused({ 'upload-length': String(2 * 1024 * 1024), 'upload-metadata': metadataHeader({ ...valid, organization_id: own }) });
    expect(over).to.deep.include({ status: 409, code: 'conflict', path: ['Upload-Length'] });
    expect(over.message).to.match(/^Upload-Length: the organization holds 2097152 of its 3145728 bytes/);

    // Authorization as POST /assets/uploads: resources.create in the organization (403 outside it, viewers too).
    const stranger = newUser();
    const outside = await fetch(endpoint, {
      method: 'POST',
      headers: { authorization: `Bearer ${stranger.token}`, 'tus-resumable': '1.0.0', 'upload-length': '10', 'upload-metadata': metadataHeader(valid) },
    });
    expect(outside.status).to.equal(403);
    const viewer = newUser();
    await addMember(stack.db, org, viewer, 'viewer');
    const tusError = await tusUpload(noise(10), valid, { headers: { authorization: `Bearer ${viewer.token}` } }).catch((e: unknown) => e);
    expect(failedStatus(tusError)).to.deep.include({ status: 403 });
    expect(await stack.db('assets').where({ organization_id: org, created_by_id: viewer.id }).count('* as n').first()).to.deep.equal({ n: 0 });
  });

  it('honours Idempotency-Key: the same creation replays the first answer, another one with the key is refused', async () => {
    const headers = {
      'upload-length': '100',
      'upload-metadata': metadataHeader({ organization_id: org, filename: 'once.mp3', filetype: 'audio/mpeg' }),
      'idempotency-key': 'tus-create-1',
    };
    const first = await create(headers);
    const again = await create(headers);
    expect(first.status).to.equal(201);
    expect(again.status).to.equal(201);
    expect(again.headers.get('idempotent-replayed')).to.equal('true');
    expect(again.headers.get('location')).to.equal(first.headers.get('location'));
    expect(again.body.upload.id).to.equal(first.body.upload.id);
    const other = await create({ ...headers, 'upload-metadata': metadataHeader({ organization_id: org, filename: 'other.mp3', filetype: 'audio/mpeg' }) });
    expect(other.status).to.equal(422);
    expect(other.body.code).to.equal('idempotency_key_reused');
  });
});
