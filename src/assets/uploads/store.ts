import { createReadStream } from 'node:fs';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { FileStore } from '@tus/file-store';
import { S3Store } from '@tus/s3-store';
import { type DataStore, ERRORS, Server } from '@tus/server';
import type { Config } from '../../config/schema.ts';
import type { Deps } from '../../platform/deps.ts';
import type { LocalDiskStorage } from '../../providers/storage/local.ts';
import type { S3Storage } from '../../providers/storage/s3.ts';
import { PostgresLocker } from './locker.ts';
import { ReceivedBytes } from './received.ts';

/** The path the tus endpoints live under: an upload's URL is `${UPLOADS_PATH}/{upload_id}`. */
export const UPLOADS_PATH = '/asset-uploads';

/**
 * Where the bytes of unfinished uploads wait, and the tus protocol server over them: the tus
 * FileStore under DATA_DIR/uploads by default, the tus S3Store (multipart uploads in the bucket)
 * when object storage is configured — so any web process can take the next PATCH of an upload.
 */
export interface UploadStore {
  readonly kind: 'local' | 's3';
  readonly tus: Server;
  readonly datastore: DataStore;
  /** The running measurement of the bytes this process wrote (finishing takes it instead of reading the file again). */
  readonly received: ReceivedBytes;
  /** Streams the bytes received so far. */
  read(id: string): Promise<Readable>;
  /** Makes a finished upload's bytes the object at `key` (the asset's file), without reading them. */
  keep(id: string, key: string, contentType: string): Promise<void>;
  /** Removes the upload's bytes and bookkeeping; removing what is gone already is no error. */
  remove(id: string): Promise<void>;
}

/** Reads of stored bytes go in 1 MiB chunks: fewer, larger reads hash faster than the 64 KiB default. */
const READ_CHUNK = 1024 * 1024;

const stores = new WeakMap<Config, UploadStore>();

/** One store per process configuration (web and worker each build their own; both see the same bytes). */
export function uploadStore(deps: Pick<Deps, 'config' | 'providers' | 'db'>): UploadStore {
  let store = stores.get(deps.config);
  if (!store) {
    store = createUploadStore(deps);
    stores.set(deps.config, store);
  }
  return store;
}

const serverFor = (datastore: DataStore, { config, db }: Pick<Deps, 'config' | 'db'>) =>
  new Server({
    path: UPLOADS_PATH,
    datastore,
    // Any web process may take an upload's next PATCH: the lock on it is in the database.
    locker: new PostgresLocker(db),
    maxSize: config.UPLOAD_MAX_FILE_BYTES,
    relativeLocation: true,
    // A finished upload is the asset's file now; it goes with the asset, not by DELETE of its upload.
    disableTerminationForFinishedUploads: true,
  });

async function removeQuietly(datastore: DataStore, id: string): Promise<void> {
  try {
    await datastore.remove(id);
  } catch (error) {
    if (error !== ERRORS.FILE_NOT_FOUND && (error as { status_code?: number }).status_code !== 404) throw error;
  }
}

function createUploadStore({ config, providers, db }: Pick<Deps, 'config' | 'providers' | 'db'>): UploadStore {
  const expirationPeriodInMilliseconds = config.UPLOAD_EXPIRES_SECONDS * 1000;
  // By name, not instanceof: a job handler may see the provider's module loaded once more.
  if (providers.storage.name === 's3') {
    const storage = providers.storage as S3Storage;
    const datastore = new S3Store({
      partSize: 8 * 1024 * 1024,
      expirationPeriodInMilliseconds,
      s3ClientConfig: {
        bucket: config.STORAGE_S3_BUCKET!,
        endpoint: config.STORAGE_S3_ENDPOINT!,
        region: config.STORAGE_S3_REGION,
        forcePathStyle: true,
        credentials: { accessKeyId: config.STORAGE_S3_ACCESS_KEY_ID!, secretAccessKey: config.STORAGE_S3_SECRET_ACCESS_KEY! },
        // Plain signed requests, as every S3-compatible store understands them (no aws-chunked trailers).
        requestChecksumCalculation: 'WHEN_REQUIRED',
        responseChecksumValidation: 'WHEN_REQUIRED',
      },
    });
    // An unfinished multipart upload cannot be read back: one resumed here unmeasured is read when it finishes.
    const received = new ReceivedBytes(() => null);
    received.follow(datastore);
    return {
      kind: 's3',
      datastore,
      received,
      tus: serverFor(datastore, { config, db }),
      async read(id) {
        const opened = await storage.open(id);
        if (!opened) throw new Error(`the bytes of upload ${id} are missing`);
        return opened.body;
      },
      keep: async (id, key, contentType) => void (await storage.copyObject(id, key, contentType)),
      async remove(id) {
        received.forget(id);
        await removeQuietly(datastore, id);
        // A completed multipart upload cannot be aborted, and the store then keeps its objects: delete them by name.
        for (const key of [id, `${id}.info`, `${id}.part`]) await storage.delete(key);
      },
    };
  }
  const storage = providers.storage as LocalDiskStorage;
  const directory = path.resolve(config.DATA_DIR, 'uploads');
  const datastore = new FileStore({ directory, expirationPeriodInMilliseconds });
  const received = new ReceivedBytes((id, end) => createReadStream(path.join(directory, id), { start: 0, end: end - 1, highWaterMark: READ_CHUNK }));
  received.follow(datastore);
  return {
    kind: 'local',
    datastore,
    received,
    tus: serverFor(datastore, { config, db }),
    read: async (id) => createReadStream(path.join(directory, id), { highWaterMark: READ_CHUNK }),
    keep: async (id, key, contentType) => void (await storage.adoptFile(key, path.join(directory, id), contentType)),
    remove: (id) => {
      received.forget(id);
      return removeQuietly(datastore, id);
    },
  };
}
