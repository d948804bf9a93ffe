import { expect } from 'chai';
import type { Db } from '../../src/db/knex.ts';
import { createLogger } from '../../src/platform/logger.ts';
import { createEmailProvider } from '../../src/providers/email/index.ts';
import { SmtpEmailProvider } from '../../src/providers/email/smtp.ts';
import { startWorker } from '../../workers/main.ts';
import { testConfig } from '../support/config.ts';
import { fakeSmtp } from '../support/smtp.ts';
import { createDb, eventually, isolatedDatabase, jobState, seedInvitation } from './support.ts';

describe('SMTP e-mail provider', function () {
  this.timeout(30_000);
  let url: string;
  let db: Db;
  let smtp: Awaited<ReturnType<typeof fakeSmtp>>;
  let provider: SmtpEmailProvider;
  const message = (key: string) => ({ idempotencyKey: key, to: 'guest@example.test', subject: 'Hello', text: 'Hi there' });

  before(async () => {
    url = await isolatedDatabase();
    db = createDb(url, { max: 2 });
    smtp = await fakeSmtp();
    provider = new SmtpEmailProvider(db, smtp.url, 'Workspace <no-reply@mail.example.test>');
  });
  beforeEach(() => smtp.received.splice(0));
  after(async () => {
    provider.close();
    await smtp.close();
    await db.destroy();
  });

  it('delivers a message once: a retry with the same key finds the delivery record and sends nothing', async () => {
    const first = await provider.send(message('test:once'));
    const second = await provider.send(message('test:once'));
    expect(second).to.deep.equal(first);
    expect(first.messageId).to.match(/^<[0-9a-f]{32}@mail\.example\.test>$/);
    expect(smtp.received).to.have.length(1);
    expect(smtp.received[0]!.to).to.deep.equal(['guest@example.test']);
    expect(smtp.received[0]!.raw).to.include(`Message-ID: ${first.messageId}`).and.include('Subject: Hello').and.include('Hi there');
    const row = await db('email_outbox').where({ idempotency_key: 'test:once' }).first();
    expect(row).to.include({ provider: 'smtp', to_address: 'guest@example.test', message_id: first.messageId });
    expect(row.sent_at).to.be.instanceOf(Date);
  });

  it('keeps an undelivered record when the server refuses, and the retry delivers with the same Message-ID', async () => {
    smtp.refuseNext();
    const failed = await provider.send(message('test:retry')).catch((error: Error) => error);
    expect(failed).to.be.instanceOf(Error);
    const pending = await db('email_outbox').where({ idempotency_key: 'test:retry' }).first();
    expect(pending.sent_at).to.equal(null);
    const delivered = await provider.send(message('test:retry'));
    expect(delivered.messageId).to.equal(pending.message_id);
    expect(smtp.received).to.have.length(1);
    expect((await db('email_outbox').where({ idempotency_key: 'test:retry' }).first()).sent_at).to.be.instanceOf(Date);
  });

  it('is chosen when SMTP_URL is set, and the invitation job sends through it', async () => {
    const config = testConfig({ SMTP_URL: smtp.url });
    expect(createEmailProvider(config, db).name).to.equal('smtp');
    expect(createEmailProvider(testConfig(), db).name).to.equal('sandbox');
    const { invitationId, jobId } = await seedInvitation(db, url);
    const worker = await startWorker(config, url, createLogger(config, 'test-worker'));
    try {
      await eventually(async () => (await jobState(db, jobId))?.state === 'completed');
    } finally {
      await worker.stop();
    }
    const invitation = await db('invitations').where({ id: invitationId }).first('email');
    expect(smtp.received.map((m) => m.to)).to.deep.equal([[invitation.email]]);
    expect(smtp.received[0]!.raw).to.include('Subject: Inviter invited you to Crash Co');
  });
});
