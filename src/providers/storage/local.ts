import { createReadStream } from 'node:fs';
import { copyFile, link, mkdir, open, readFile, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { ByteRange, ObjectStorage, OpenedObject, StoredObject } from './types.ts';

const missing = (error: unknown) => (error as NodeJS.ErrnoException).code === 'ENOENT';

/**
 * Flushes a stored object and its sidecar to disk, and their directory entries: callers commit
 * "stored" (an upload's `success`, a generation's asset) right after, and that must survive a
 * power loss as the database row does.
 */
async function makeDurable(file: string): Promise<void> {
  for (const target of [file, `${file}.type`, path.dirname(file)]) await syncPath(target);
}

async function syncPath(target: string): Promise<void> {
  const handle = await open(target, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Writes (replacing) and flushes a file through one handle. */
async function writeDurably(file: string, data: Buffer | string): Promise<void> {
  const handle = await open(file, 'w');
  try {
    await handle.writeFile(data);
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Files under DATA_DIR/storage; the content type is kept in a sidecar so reads can serve it. */
export class LocalDiskStorage implements ObjectStorage {
  readonly name = 'local';

  private readonly root: string;
  constructor(root: string) {
    this.root = root;
  }

  private file(key: string): string {
    const resolved = path.resolve(this.root, key);
    if (!resolved.startsWith(path.resolve(this.root) + path.sep)) throw new Error(`storage key escapes the root: ${key}`);
    return resolved;
  }

  async put(key: string, body: Buffer, contentType: string): Promise<StoredObject> {
    const file = this.file(key);
    await mkdir(path.dirname(file), { recursive: true });
    // The object and its sidecar side by side, each written and flushed through the handle that wrote
    // it (no second open to sync), then their directory entries: as durable as makeDurable, with 4
    // fewer file operations and the two flushes overlapping.
    await Promise.all([writeDurably(file, body), writeDurably(`${file}.type`, contentType)]);
    await syncPath(path.dirname(file));
    return { key, size: body.length, contentType };
  }

  /**
   * Stores a file already on this disk (a finished upload) under `key` without reading it: a hard
   * link (a copy across file systems), so the source stays until its owner removes it and a
   * retried adoption overwrites the same object.
   */
  async adoptFile(key: string, source: string, contentType: string): Promise<StoredObject> {
    const file = this.file(key);
    await mkdir(path.dirname(file), { recursive: true });
    await rm(file, { force: true });
    await link(source, file).catch(async (error: NodeJS.ErrnoException) => {
      if (error.code !== 'EXDEV' && error.code !== 'EPERM') throw error;
      await copyFile(source, file);
    });
    await writeFile(`${file}.type`, contentType);
    await makeDurable(file);
    return { key, size: (await stat(file)).size, contentType };
  }

  async get(key: string): Promise<{ body: Buffer; contentType: string } | null> {
    const file = this.file(key);
    try {
      return { body: await readFile(file), contentType: (await readFile(`${file}.type`, 'utf8')).trim() };
    } catch (error) {
      if (missing(error)) return null;
      throw error;
    }
  }

  async open(key: string, range?: ByteRange): Promise<OpenedObject | null> {
    const file = this.file(key);
    try {
      const [{ size }, contentType] = await Promise.all([stat(file), readFile(`${file}.type`, 'utf8')]);
      return { body: createReadStream(file, range ?? {}), size, contentType: contentType.trim() };
    } catch (error) {
      if (missing(error)) return null;
      throw error;
    }
  }

  async delete(key: string): Promise<void> {
    const file = this.file(key);
    await rm(file, { force: true });
    await rm(`${file}.type`, { force: true });
  }
}
