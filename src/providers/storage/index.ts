import path from 'node:path';
import type { Config } from '../../config/schema.ts';
import { LocalDiskStorage } from './local.ts';
import type { ObjectStorage } from './types.ts';

export type { ObjectStorage, StoredObject } from './types.ts';

export function createStorage(config: Config): ObjectStorage {
  // S3-compatible adapter: see issue #2, selected when STORAGE_S3_ENDPOINT is set.
  return new LocalDiskStorage(path.resolve(config.DATA_DIR, 'storage'));
}
