import path from 'node:path';
import type { Config } from '../../config/schema.ts';
import { LocalDiskStorage } from './local.ts';
import { S3Storage } from './s3.ts';
import type { ObjectStorage } from './types.ts';

export type { ByteRange, ObjectStorage, OpenedObject, StoredObject } from './types.ts';

export function createStorage(config: Config): ObjectStorage {
  if (config.STORAGE_S3_ENDPOINT) {
    return new S3Storage({
      endpoint: config.STORAGE_S3_ENDPOINT,
      bucket: config.STORAGE_S3_BUCKET!,
      region: config.STORAGE_S3_REGION,
      accessKeyId: config.STORAGE_S3_ACCESS_KEY_ID!,
      secretAccessKey: config.STORAGE_S3_SECRET_ACCESS_KEY!,
    });
  }
  return new LocalDiskStorage(path.resolve(config.DATA_DIR, 'storage'));
}
