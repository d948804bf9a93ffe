import { setTimeout as sleep } from 'node:timers/promises';
import type { Db } from '../../db/knex.ts';
import { prepareMessage } from './format.ts';
import { recordInOutbox } from './outbox.ts';
import type { EmailMessage, EmailProvider } from './types.ts';

/** Offline e-mail: messages land in the `email_outbox` table, where operators and tests read them. */
export class SandboxEmailProvider implements EmailProvider {
  readonly name = 'sandbox';

  /** `delayMs` (tests only, EMAIL_SANDBOX_DELAY_MS): wait after recording, so a crash can land after the side effect. */
  private readonly db: Db;
  private readonly delayMs: number;
  constructor(db: Db, delayMs = 0) {
    this.db = db;
    this.delayMs = delayMs;
  }

  async send(unprepared: EmailMessage): Promise<{ messageId: string }> {
    const message = prepareMessage(unprepared);
    const row = await recordInOutbox(this.db, message, { provider: 'sandbox', sent: true });
    if (this.delayMs > 0) await sleep(this.delayMs);
    return { messageId: String(row.id) };
  }
}
