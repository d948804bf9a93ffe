import type { Config } from '../../config/schema.ts';
import type { Db } from '../../db/knex.ts';
import { SandboxEmailProvider } from './sandbox.ts';
import type { EmailProvider } from './types.ts';

export type { EmailMessage, EmailProvider } from './types.ts';

export function createEmailProvider(config: Config, db: Db): EmailProvider {
  // SMTP adapter: see issue #2 (nodemailer), selected when SMTP_URL is set.
  void config;
  return new SandboxEmailProvider(db);
}
