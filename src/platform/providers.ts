import type { Config } from '../config/schema.ts';
import type { Db } from '../db/knex.ts';
import { createEmailProvider, type EmailProvider } from '../providers/email/index.ts';
import { createStorage, type ObjectStorage } from '../providers/storage/index.ts';

/**
 * External services, each behind a small interface: the sandbox/local implementation when its
 * variables are unset, the real HTTP adapter when they are set.
 */
export interface Providers {
  email: EmailProvider;
  storage: ObjectStorage;
}

export function createProviders(config: Config, db: Db): Providers {
  return { email: createEmailProvider(config, db), storage: createStorage(config) };
}
