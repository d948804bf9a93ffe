import { expect } from 'chai';
import type { Db } from '../../src/db/knex.ts';
import { createLogger } from '../../src/platform/logger.ts';
import { startWorker, type WorkerProcess } from '../../workers/main.ts';
import { testConfig } from '../support/config.ts';
import { createDb, eventually, isolatedDatabase, jobState, outboxRows, seedInvitation } from '../jobs/support.ts';

describe('invitation e-mail job', function () {
  this.timeout(30_000);
  let url: string;
  let db: Db;
  let worker: WorkerProcess | undefined;
  const config = testConfig({ PUBLIC_URL: 'https://app.example.test' });

  before(async () => {
    url = await isolatedDatabase();
    db = createDb(url, { max: 2 });
  });
  afterEach(async () => {
    await worker?.stop();
    worker = undefined;
  });
  after(async () => {
    await db.destroy();
  });

  it('sends the invitation through the e-mail provider once the job runs', async () => {
    const { invitationId, jobId } = await seedInvitation(db, url);
    worker = await startWorker(config, url, createLogger(config, 'test-worker'));
    await eventually(async () => (await jobState(db, jobId))?.state === 'completed');
    const invitation = await db('invitations').where({ id: invitationId }).first();
    const rows = await outboxRows(db, invitationId);
    expect(rows).to.have.length(1);
    expect(rows[0]).to.include({ to_address: invitation.email, subject: 'Inviter invited you to Crash Co', provider: 'sandbox' });
    expect(rows[0].html_body).to.contain('<p>Inviter invited you to join Crash Co as member.</p>');
    expect(rows[0].sent_at).to.be.instanceOf(Date);
    expect(rows[0].text_body).to.equal(
      [
        'Inviter invited you to join Crash Co as member.',
        `Accept it (signed in with this e-mail address) before ${invitation.expires_at.toISOString()}:`,
        `PATCH https://app.example.test/organizations/${invitation.organization_id}/invitations/${invitationId} {"status":"accepted"}`,
      ].join('\n\n'),
    );
  });

  it('sends nothing for an invitation revoked before the job ran, and completes the job', async () => {
    const { invitationId, jobId } = await seedInvitation(db, url);
    await db('invitations').where({ id: invitationId }).update({ status: 'revoked' });
    worker = await startWorker(config, url, createLogger(config, 'test-worker'));
    await eventually(async () => (await jobState(db, jobId))?.state === 'completed');
    expect(await outboxRows(db, invitationId)).to.have.length(0);
  });
});
