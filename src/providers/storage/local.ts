import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { ObjectStorage, StoredObject } from './types.ts';

/** Files under DATA_DIR/storage; the content type is kept in a sidecar so reads can serve it. */
export class LocalDiskStorage implements ObjectStorage {
  readonly name = 'local';

  constructor(private readonly root: string) {}

  private file(key: string): string {
    const resolved = path.resolve(this.root, key);
    if (!resolved.startsWith(path.resolve(this.root) + path.sep)) throw new Error(`storage key escapes the root: ${key}`);
    return resolved;
  }

  async put(key: string, body: Buffer, contentType: string): Promise<StoredObject> {
    const file = this.file(key);
    await mkdir(path.dirname(file), { recursive: true });
    await writeFile(file, body);
    await writeFile(`${file}.type`, contentType);
    return { key, size: body.length, contentType };
  }

  async get(key: string): Promise<{ body: Buffer; contentType: string } | null> {
    const file = this.file(key);
    try {
      return { body: await readFile(file), contentType: (await readFile(`${file}.type`, 'utf8')).trim() };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw error;
    }
  }

  async delete(key: string): Promise<void> {
    const file = this.file(key);
    await rm(file, { force: true });
    await rm(`${file}.type`, { force: true });
  }
}
