import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { png } from '../assets/helpers.ts';
import { createOrganization } from '../support/organizations.ts';
import { newUser, type TestServer, type TestUser } from '../support/server.ts';
import { createUploadFor, expectNoStagedBytes, noise, patchBytes, sha256, startUploadStack, storedFile, type UploadStack, uploadUrlOn } from './support.ts';

/**
 * One upload, its PATCHes taken by different web processes (two apps on one database and one
 * DATA_DIR, each with its own upload store): the bytes are measured as they arrive, per process, and
 * a process resuming an upload it did not follow measures what is stored first — so the finished
 * upload's checksum, size and text checks cover every byte, whoever took which.
 */
describe('asset uploads across web processes', function () {
  this.timeout(60_000);
  let stack: UploadStack;
  let other: TestServer;
  let alice: TestUser;
  let org: string;

  before(async () => {
    stack = await startUploadStack();
    other = await stack.anotherServer();
    alice = newUser();
    org = await createOrganization(stack.server, alice);
  });
  after(async () => stack?.stop());

  const start = async (body: Record<string, unknown>) => {
    const res = await createUploadFor(stack.server, alice, { organization_id: org, ...body });
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    return res.body as { asset: { id: string }; upload: { id: string; url: string } };
  };
  /** The bytes in three PATCHes: the first and last to the first process, the middle one to the other. */
  const sendInThirds = async (url: string, bytes: Buffer) => {
    const [a, b] = [Math.floor(bytes.length / 3), Math.floor((2 * bytes.length) / 3)];
    const answers = [];
    answers.push(await patchBytes(url, alice.token, 0, bytes.subarray(0, a)));
    answers.push(await patchBytes(uploadUrlOn(other, url), alice.token, a, bytes.subarray(a, b)));
    answers.push(await patchBytes(url, alice.token, b, bytes.subarray(b)));
    return answers;
  };
  const asset = async (id: string) => (await stack.server.request('get', `/assets/${id}`, { token: alice.token })).body;

  it('verifies the checksum of an upload whose PATCHes went to two processes, back and forth', async () => {
    const bytes = Buffer.concat([png(8, 8), noise(300_000)]);
    const { asset: created, upload } = await start({ filename: 'relay.png', mime_type: 'image/png', size: bytes.length, checksum_sha256: sha256(bytes) });
    const answers = await sendInThirds(upload.url, bytes);
    expect(answers.map((answer) => answer.status)).to.deep.equal([204, 204, 204]);
    expect(answers[2]!.headers.get('upload-offset')).to.equal(String(bytes.length));
    expect(await stack.db('asset_uploads').where({ id: upload.id }).first()).to.deep.include({ state: 'completed', sha256: sha256(bytes) });
    expect((await asset(created.id)).upload_file_state).to.equal('success');
    expect(readFileSync(storedFile(stack.config, org, created.id)).equals(bytes)).to.equal(true);
  });

  it('finishes in the process that did not take the earlier bytes: it measures them from the store first', async () => {
    const bytes = Buffer.concat([png(8, 8), noise(200_000)]);
    const { upload } = await start({ filename: 'handover.png', mime_type: 'image/png', size: bytes.length, checksum_sha256: sha256(bytes) });
    const half = bytes.length / 2;
    expect((await patchBytes(upload.url, alice.token, 0, bytes.subarray(0, half))).status).to.equal(204);
    expect((await patchBytes(uploadUrlOn(other, upload.url), alice.token, half, bytes.subarray(half))).status).to.equal(204);
    expect(await stack.db('asset_uploads').where({ id: upload.id }).first()).to.deep.include({ state: 'completed', sha256: sha256(bytes) });
  });

  it('a wrong checksum still ends in error, naming the hash of all the bytes', async () => {
    const bytes = Buffer.concat([png(8, 8), noise(300_000, 11)]);
    const { asset: created, upload } = await start({ filename: 'wrong.png', mime_type: 'image/png', size: bytes.length, checksum_sha256: 'a'.repeat(64) });
    const answers = await sendInThirds(upload.url, bytes);
    expect(answers.map((answer) => answer.status)).to.deep.equal([204, 204, 422]);
    expect(answers[2]!.body.message).to.equal(
      `the upload failed its checks: checksum_sha256: the bytes hash to ${sha256(bytes)}, not the declared ${'a'.repeat(64)}`,
    );
    expect((await asset(created.id)).import_error).to.deep.equal({
      code: 'checksum_mismatch',
      message: `checksum_sha256: the bytes hash to ${sha256(bytes)}, not the declared ${'a'.repeat(64)}`,
    });
    expectNoStagedBytes(stack.config, upload.id);
  });

  it('a text upload whose bad byte went to the other process still fails its text check', async () => {
    const text = Buffer.from('plain words\n'.repeat(3000));
    // An invalid UTF-8 byte in the middle third only.
    text[Math.floor(text.length / 2)] = 0xff;
    const { asset: created, upload } = await start({ filename: 'notes.txt', mime_type: 'text/plain', size: text.length });
    const answers = await sendInThirds(upload.url, text);
    expect(answers.map((answer) => answer.status)).to.deep.equal([204, 204, 422]);
    expect((await asset(created.id)).import_error).to.deep.equal({ code: 'invalid_text', message: 'mime_type: the bytes are not valid utf-8 text' });
  });
});
