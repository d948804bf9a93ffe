import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Config } from '../config/schema.ts';

/**
 * The HS256 secret: JWT_SECRET when set; in development, one generated on first run and kept in
 * DATA_DIR so tokens survive restarts; none when tokens are verified through a JWKS.
 */
export async function resolveJwtSecret(config: Config): Promise<string | undefined> {
  if (config.JWT_SECRET) return config.JWT_SECRET;
  if (config.JWKS_URI) return undefined;
  const file = path.resolve(config.DATA_DIR, 'jwt-secret');
  if (existsSync(file)) return (await readFile(file, 'utf8')).trim();
  await mkdir(path.dirname(file), { recursive: true });
  const secret = randomBytes(48).toString('base64url');
  await writeFile(file, secret, { mode: 0o600, flag: 'wx' }).catch(async (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EEXIST') throw error; // another process won the race: use its secret
  });
  return (await readFile(file, 'utf8')).trim();
}
