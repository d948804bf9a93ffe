import { expect } from 'chai';
import { createReadStream } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { FileStore } from '@tus/file-store';
import { Upload } from '@tus/server';
import { ReceivedBytes } from '../../src/assets/uploads/received.ts';
import { noise, sha256 } from './support.ts';

/**
 * The running measurement on a real tus FileStore: bytes are measured as they are written, handed
 * to the finish only when they cover the whole upload, measured from the stored bytes when a
 * process picks an upload up mid-way, and dropped when a write fails.
 */
describe('measuring upload bytes as they are written', () => {
  let directory: string;
  const bytes = noise(100_000, 3);

  beforeEach(async () => {
    directory = await mkdtemp(path.join(tmpdir(), 'received-'));
  });
  afterEach(async () => rm(directory, { recursive: true, force: true }));

  /** A FileStore whose writes one process (its own ReceivedBytes) follows. */
  const process = () => {
    const datastore = new FileStore({ directory });
    const received = new ReceivedBytes((id, end) => createReadStream(path.join(directory, id), { start: 0, end: end - 1 }));
    received.follow(datastore);
    return { datastore, received };
  };
  const create = async (datastore: FileStore, id: string) =>
    datastore.create(new Upload({ id, size: bytes.length, offset: 0, metadata: { filetype: 'application/octet-stream' } }));
  const declared = { size: bytes.length, checksum: null };

  it('follows the bytes one process writes and hands over the measurement of all of them, once', async () => {
    const one = process();
    await create(one.datastore, 'u1');
    expect(await one.datastore.write(Readable.from([bytes.subarray(0, 40_000)]), 'u1', 0)).to.equal(40_000);
    expect(await one.datastore.write(Readable.from([bytes.subarray(40_000)]), 'u1', 40_000)).to.equal(bytes.length);
    // Only a measurement of every declared byte is handed over.
    expect(one.received.take('u1', bytes.length + 1)).to.equal(null);
    await create(one.datastore, 'u2');
    await one.datastore.write(Readable.from([bytes.subarray(0, 40_000)]), 'u2', 0);
    await one.datastore.write(Readable.from([bytes.subarray(40_000)]), 'u2', 40_000);
    expect(one.received.take('u2', bytes.length)?.verdict(declared)).to.deep.equal({ size: bytes.length, sha256: sha256(bytes) });
    expect(one.received.take('u2', bytes.length)).to.equal(null);
  });

  it('measures the stored bytes first when it resumes an upload another process began, or one it lost track of', async () => {
    const [one, two] = [process(), process()];
    await create(one.datastore, 'u3');
    await one.datastore.write(Readable.from([bytes.subarray(0, 30_000)]), 'u3', 0);
    await two.datastore.write(Readable.from([bytes.subarray(30_000, 70_000)]), 'u3', 30_000);
    // Back to the first process: its measurement stopped at 30 000, the upload is at 70 000.
    await one.datastore.write(Readable.from([bytes.subarray(70_000)]), 'u3', 70_000);
    expect(two.received.take('u3', bytes.length)).to.equal(null);
    expect(one.received.take('u3', bytes.length)?.verdict(declared)).to.deep.equal({ size: bytes.length, sha256: sha256(bytes) });
  });

  it('drops the measurement when a write fails: the bytes it saw may not all be stored', async () => {
    const one = process();
    await create(one.datastore, 'u4');
    await one.datastore.write(Readable.from([bytes.subarray(0, 50_000)]), 'u4', 0);
    const failing = new Readable({
      read() {
        this.push(bytes.subarray(50_000, 60_000));
        this.destroy(new Error('connection reset'));
      },
    });
    const error = await one.datastore.write(failing, 'u4', 50_000).catch((e: unknown) => e);
    expect(error).to.not.equal(undefined);
    // Whatever reached the disk is what the next write measures first. Proof that it reads the
    // stored bytes rather than trusting what it saw: they are replaced under it before it resumes.
    const { offset } = await one.datastore.getUpload('u4');
    expect(offset).to.be.within(50_000, 60_000);
    const storedInstead = noise(offset, 99);
    await writeFile(path.join(directory, 'u4'), storedInstead);
    await one.datastore.write(Readable.from([bytes.subarray(offset)]), 'u4', offset);
    const all = Buffer.concat([storedInstead, bytes.subarray(offset)]);
    expect(one.received.take('u4', bytes.length)?.verdict(declared)).to.deep.equal({ size: bytes.length, sha256: sha256(all) });
  });
});
