import type { Db } from '../../db/knex.ts';
import type { EmailMessage } from './types.ts';

export interface OutboxRecord {
  id: string | number;
  message_id: string | null;
  sent_at: Date | null;
}

/**
 * The message's record in `email_outbox`, keyed by its idempotency key: created on first sight,
 * the existing one on a retry (so a provider can tell a message it already sent).
 */
export async function recordInOutbox(
  db: Db,
  message: EmailMessage & { html: string },
  delivery: { provider: string; messageId?: string; sent?: boolean },
): Promise<OutboxRecord> {
  const [row] = (await db('email_outbox')
    .insert({
      idempotency_key: message.idempotencyKey,
      to_address: message.to,
      subject: message.subject,
      text_body: message.text,
      html_body: message.html,
      provider: delivery.provider,
      ...(delivery.messageId !== undefined && { message_id: delivery.messageId }),
      ...(delivery.sent && { sent_at: db.fn.now() }),
    })
    .onConflict('idempotency_key')
    .merge(['idempotency_key']) // no-op update so RETURNING yields the existing row on a retry
    .returning(['id', 'message_id', 'sent_at'])) as OutboxRecord[];
  return row!;
}
