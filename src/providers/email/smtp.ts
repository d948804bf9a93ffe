import { createHash } from 'node:crypto';
import nodemailer, { type Transporter } from 'nodemailer';
import type { Db } from '../../db/knex.ts';
import { prepareMessage } from './format.ts';
import { recordInOutbox } from './outbox.ts';
import type { EmailMessage, EmailProvider } from './types.ts';

/**
 * E-mail through an SMTP server (nodemailer). Each logical message has a delivery record in
 * `email_outbox` (keyed by its idempotency key): a retried job finds `sent_at` set and sends
 * nothing. The one unavoidable window — the server accepted the message but the process died
 * before recording it — resends with the same Message-ID, which receiving servers dedupe on.
 */
export class SmtpEmailProvider implements EmailProvider {
  readonly name = 'smtp';
  private readonly transport: Transporter;

  private readonly db: Db;
  private readonly from: string;
  constructor(db: Db, smtpUrl: string, from: string) {
    this.db = db;
    this.from = from;
    this.transport = nodemailer.createTransport(smtpUrl);
  }

  async send(unprepared: EmailMessage): Promise<{ messageId: string }> {
    const message = prepareMessage(unprepared);
    const messageId = `<${createHash('sha256').update(message.idempotencyKey).digest('hex').slice(0, 32)}@${domainOf(this.from)}>`;
    const delivery = await recordInOutbox(this.db, message, { provider: 'smtp', messageId });
    if (delivery.sent_at) return { messageId: delivery.message_id ?? messageId };
    await this.transport.sendMail({
      from: this.from,
      to: message.to,
      subject: message.subject,
      text: message.text,
      html: message.html,
      messageId: delivery.message_id ?? messageId,
    });
    await this.db('email_outbox').where({ idempotency_key: message.idempotencyKey }).update({ sent_at: this.db.fn.now() });
    return { messageId: delivery.message_id ?? messageId };
  }

  close(): void {
    this.transport.close();
  }
}

function domainOf(from: string): string {
  return /@([^>\s]+)/.exec(from)?.[1] ?? 'workspace.local';
}
