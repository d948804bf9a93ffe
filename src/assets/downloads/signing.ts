import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Config } from '../../config/schema.ts';
import type { Disposition } from './serve.ts';

/** What an API-served download URL grants: one asset, to the user who asked for it, until `expires` (unix seconds). */
export interface DownloadGrant {
  assetId: string;
  userId: string;
  expires: number;
  disposition: Disposition;
}

const keys = new WeakMap<Config, Promise<Buffer>>();

/**
 * The HMAC key: DOWNLOAD_URL_SECRET, else one generated on first use and kept in DATA_DIR (shared by
 * the processes of one host, and surviving restarts so URLs already handed out stay valid).
 */
export function signingKey(config: Config): Promise<Buffer> {
  let key = keys.get(config);
  if (!key) {
    key = config.DOWNLOAD_URL_SECRET ? Promise.resolve(Buffer.from(config.DOWNLOAD_URL_SECRET)) : generatedKey(config);
    keys.set(config, key);
  }
  return key;
}

async function generatedKey(config: Config): Promise<Buffer> {
  const file = path.resolve(config.DATA_DIR, 'download-url-secret');
  if (!existsSync(file)) {
    await mkdir(path.dirname(file), { recursive: true });
    await writeFile(file, randomBytes(48).toString('base64url'), { mode: 0o600, flag: 'wx' }).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== 'EEXIST') throw error; // another process won the race: use its key
    });
  }
  return Buffer.from((await readFile(file, 'utf8')).trim());
}

const payload = (grant: DownloadGrant) => [grant.assetId, grant.userId, grant.expires, grant.disposition].join('\n');

export async function sign(config: Config, grant: DownloadGrant): Promise<string> {
  return createHmac('sha256', await signingKey(config))
    .update(payload(grant))
    .digest('base64url');
}

/** Whether `signature` is this grant's (constant time). */
export async function verify(config: Config, grant: DownloadGrant, signature: string): Promise<boolean> {
  const expected = Buffer.from(await sign(config, grant));
  const given = Buffer.from(signature);
  return given.length === expected.length && timingSafeEqual(given, expected);
}
