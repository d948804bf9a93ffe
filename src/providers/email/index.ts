import type { Config } from '../../config/schema.ts';
import type { Db } from '../../db/knex.ts';
import { SandboxEmailProvider } from './sandbox.ts';
import { SmtpEmailProvider } from './smtp.ts';
import type { EmailProvider } from './types.ts';

export type { EmailMessage, EmailProvider } from './types.ts';

/** SMTP (nodemailer) when SMTP_URL is set; otherwise the sandbox outbox table. */
export function createEmailProvider(config: Config, db: Db): EmailProvider {
  if (config.SMTP_URL) return new SmtpEmailProvider(db, config.SMTP_URL, config.EMAIL_FROM);
  return new SandboxEmailProvider(db, config.EMAIL_SANDBOX_DELAY_MS);
}
