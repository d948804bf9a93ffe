export interface EmailMessage {
  to: string;
  subject: string;
  text: string;
  /** Optional HTML part; without one, providers derive it from `text`, escaped. */
  html?: string;
  /** Stable per logical message: a retried job sends (or records) the message once. */
  idempotencyKey: string;
}

export interface EmailProvider {
  readonly name: 'sandbox' | 'smtp';
  send(message: EmailMessage): Promise<{ messageId: string }>;
}
