import type { Db } from '../../db/knex.ts';
import type { EmailMessage, EmailProvider } from './types.ts';

/** Offline e-mail: messages land in the `email_outbox` table, where operators and tests read them. */
export class SandboxEmailProvider implements EmailProvider {
  readonly name = 'sandbox';

  constructor(private readonly db: Db) {}

  async send(message: EmailMessage): Promise<{ messageId: string }> {
    const [row] = await this.db('email_outbox')
      .insert({ idempotency_key: message.idempotencyKey, to_address: message.to, subject: message.subject, text_body: message.text, html_body: message.html ?? null, provider: 'sandbox' })
      .onConflict('idempotency_key')
      .merge(['idempotency_key']) // no-op update so RETURNING yields the existing row on a retry
      .returning('id');
    return { messageId: String(row.id) };
  }
}
