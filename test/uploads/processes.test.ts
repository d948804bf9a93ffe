import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { UPLOAD_LOCKED, PostgresLocker } from '../../src/assets/uploads/locker.ts';
import { createDb } from '../../src/db/knex.ts';
import { png } from '../assets/helpers.ts';
import { eventually } from '../support/eventually.ts';
import { createOrganization } from '../support/organizations.ts';
import { newUser, type TestServer, type TestUser } from '../support/server.ts';
import {
  createUploadFor,
  expectNoStagedBytes,
  noise,
  patchBytes,
  sha256,
  startUploadStack,
  storedFile,
  tusRequest,
  type UploadStack,
  tusPatchRequest,
  uploadUrlOn,
} from './support.ts';

/** A PATCH whose body is sent in two steps: `first` now, the rest when `finish()` is called; resolves with its status. */
function patchInTwoSteps(uploadUrl: string, token: string, offset: number, bytes: Buffer, first: number) {
  const req = tusPatchRequest(uploadUrl, token, offset, bytes.length);
  const status = new Promise<number>((resolve, reject) => {
    req.on('response', (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode!));
    });
    req.on('error', reject);
  });
  req.write(bytes.subarray(0, first));
  return { status, finish: () => req.end(bytes.subarray(first)) };
}

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

  it('two processes racing PATCHes of one upload: one writes, the other is 423 while it does and 409 after, and the bytes are exactly the winner’s', async () => {
    const bytes = Buffer.concat([png(8, 8), noise(500_000, 21)]);
    const { asset: created, upload } = await start({ filename: 'race.png', mime_type: 'image/png', size: bytes.length, checksum_sha256: sha256(bytes) });
    const first = patchInTwoSteps(upload.url, alice.token, 0, bytes, 100_000);
    await eventually('the first PATCH is writing', async () => Number((await tusRequest(upload.url, 'HEAD', alice.token)).headers.get('upload-offset')) > 0);
    // The other process, the same offset, while the first still writes: locked.
    const locked = await patchBytes(uploadUrlOn(other, upload.url), alice.token, 0, noise(bytes.length, 99));
    expect(locked.status).to.equal(423);
    expect(locked.body).to.deep.include({ code: 'conflict' });
    expect(locked.body.message).to.match(/^the upload is locked: another request is writing to it/);
    expect(locked.headers.get('tus-resumable')).to.equal('1.0.0');
    first.finish();
    expect(await first.status).to.equal(204);
    // Once it is done, the same request is stale: its offset is not the upload's any more.
    const stale = await patchBytes(uploadUrlOn(other, upload.url), alice.token, 0, noise(bytes.length, 99));
    expect(stale.status).to.equal(409);
    expect(await stack.db('asset_uploads').where({ id: upload.id }).first()).to.deep.include({ state: 'completed', sha256: sha256(bytes) });
    expect(readFileSync(storedFile(stack.config, org, created.id)).equals(bytes)).to.equal(true);
  });

  it('two processes PATCHing different bytes at once: exactly one answer is 204 and the file is exactly its bytes', async () => {
    const size = 2 * 1024 * 1024;
    const mine = Buffer.concat([png(8, 8), noise(size - png(8, 8).length, 31)]);
    const theirs = Buffer.concat([png(8, 8), noise(size - png(8, 8).length, 32)]);
    const { asset: created, upload } = await start({ filename: 'both.png', mime_type: 'image/png', size });
    const answers = await Promise.all([patchBytes(upload.url, alice.token, 0, mine), patchBytes(uploadUrlOn(other, upload.url), alice.token, 0, theirs)]);
    const statuses = answers.map((answer) => answer.status);
    expect(statuses.filter((status) => status === 204)).to.have.length(1);
    expect([409, 423]).to.include(statuses.find((status) => status !== 204));
    const winner = statuses[0] === 204 ? mine : theirs;
    expect(readFileSync(storedFile(stack.config, org, created.id)).equals(winner)).to.equal(true);
    expect((await stack.db('asset_uploads').where({ id: upload.id }).first()).sha256).to.equal(sha256(winner));
  });

  it('the lock is the database’s: another process cannot take it until it is let go, and no connection is kept while none is held', async () => {
    const [dbA, dbB] = [createDb(stack.databaseUrl, { max: 2 }), createDb(stack.databaseUrl, { max: 2 })];
    try {
      const [a, b] = [new PostgresLocker(dbA), new PostgresLocker(dbB)];
      const signal = new AbortController().signal;
      const held = a.newLock('0123456789abcdef0123456789abcdef');
      await held.lock(signal, () => undefined);
      const used = (db: typeof dbA) => (db.client as { pool: { numUsed(): number } }).pool.numUsed();
      expect(used(dbA)).to.equal(1);
      // Another upload's lock shares the session.
      const another = a.newLock('fedcba9876543210fedcba9876543210');
      await another.lock(signal, () => undefined);
      expect(used(dbA)).to.equal(1);
      const error = await b
        .newLock('0123456789abcdef0123456789abcdef')
        .lock(signal, () => undefined)
        .catch((e: unknown) => e);
      expect(error).to.equal(UPLOAD_LOCKED);
      expect(used(dbB)).to.equal(0);
      await held.unlock();
      await another.unlock();
      expect(used(dbA)).to.equal(0);
      const taken = b.newLock('0123456789abcdef0123456789abcdef');
      await taken.lock(signal, () => undefined);
      await taken.unlock();
    } finally {
      await dbA.destroy();
      await dbB.destroy();
    }
  });
});
