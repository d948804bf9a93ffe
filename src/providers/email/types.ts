export interface EmailMessage {
  to: string;
  subject: string;
  text: string;
  html?: string;
  /** Stable per logical message: a retried job sends (or records) the message once. */
  idempotencyKey: string;
}

export interface EmailProvider {
  readonly name: 'sandbox' | 'smtp';
  send(message: EmailMessage): Promise<{ messageId: string }>;
}
