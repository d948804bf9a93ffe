import { pipeline, type Readable, Transform } from 'node:stream';
import type { DataStore } from '@tus/server';
import { YoungCollections } from '../../platform/young-collections.ts';
import { Measurement } from './verify.ts';

/** Uploads whose running measurement a process keeps; past it the oldest is dropped (it costs a re-read, not a wrong answer). */
const KEPT = 1000;
/** Bytes held between the socket and the disk: the socket keeps reading while a write is under way. */
const BUFFERED = 1024 * 1024;
/**
 * The request's chunks, once written, are garbage outside V8's heap: a young collection every 8 MiB
 * frees them before V8's external-memory limit makes it mark the whole heap (../../platform/young-collections.ts).
 */
const young = new YoungCollections(8 * 1024 * 1024);

/**
 * The running measurement (size, SHA-256, text check) of each upload this process writes, fed by
 * the store's write path as the bytes go to the store — so finishing an upload does not read its
 * file a second time. A measurement is only ever used at the offset it reached: when a PATCH starts
 * where this process has none (an earlier PATCH went to another web process, or this one restarted),
 * the bytes already stored up to that offset are measured first (`storedBytes`), and when they
 * cannot be read back (an unfinished S3 multipart upload) the upload goes unmeasured and its finish
 * reads the file as before. A write that fails drops the measurement: the bytes it saw may not all
 * be stored.
 */
export class ReceivedBytes {
  private readonly running = new Map<string, Measurement>();

  private readonly storedBytes: (id: string, end: number) => Readable | null;
  constructor(
    /** The stored bytes [0, end) of an upload, or null when the store cannot read back an unfinished upload. */
    storedBytes: (id: string, end: number) => Readable | null,
  ) {
    this.storedBytes = storedBytes;
  }

  /** Makes `datastore.write` measure what it writes. */
  follow(datastore: DataStore): void {
    const write = datastore.write.bind(datastore);
    datastore.write = async (readable: Readable, id: string, offset: number) => {
      const measurement = await this.measurementAt(datastore, id, offset);
      if (!measurement) return write(readable, id, offset);
      this.running.delete(id);
      const measuring = new Transform({
        highWaterMark: BUFFERED,
        transform(chunk: Buffer, _encoding, done) {
          measurement.update(chunk);
          young.streamedBytes(chunk.length);
          done(null, chunk);
        },
      });
      // pipeline: an error or early close of either side reaches the other, as in the store's own pipeline.
      const written = await write(
        pipeline(readable, measuring, () => undefined),
        id,
        offset,
      );
      // Kept only when it saw exactly the bytes the store says it wrote.
      if (written === measurement.size) this.keep(id, measurement);
      return written;
    };
  }

  /** The measurement of all `size` bytes of a finished upload, if this process followed them; it is handed over once. */
  take(id: string, size: number): Measurement | null {
    const measurement = this.running.get(id);
    this.running.delete(id);
    return measurement?.size === size ? measurement : null;
  }

  forget(id: string): void {
    this.running.delete(id);
  }

  private keep(id: string, measurement: Measurement): void {
    this.running.set(id, measurement);
    if (this.running.size > KEPT) this.running.delete(this.running.keys().next().value!);
  }

  /** The measurement of the bytes before `offset`: the running one, or one made now from the stored bytes. */
  private async measurementAt(datastore: DataStore, id: string, offset: number): Promise<Measurement | null> {
    const running = this.running.get(id);
    if (running?.size === offset) return running;
    this.running.delete(id);
    const stored = offset === 0 ? null : this.storedBytes(id, offset);
    if (offset > 0 && !stored) return null;
    const upload = await datastore.getUpload(id);
    const measurement = new Measurement(upload.metadata?.filetype ?? 'application/octet-stream');
    if (stored) for await (const chunk of stored) measurement.update(chunk as Buffer);
    return measurement.size === offset ? measurement : null;
  }
}
