import { createHash } from 'node:crypto';
import { expect } from 'chai';
import { grantCredits } from '../../src/credits/ledger.ts';
import { placeHold } from '../../src/credits/holds.ts';
import { captureHold } from '../../src/credits/hold-resolutions.ts';
import { createCreditPeriods } from '../../src/app/credit-periods.ts';
import type { Deps } from '../../src/platform/deps.ts';
import { balanceAlertCheckJob, balanceAlertEmailJob } from '../../src/credits/jobs.ts';
import { runJob, type JobContext } from '../../src/jobs/define.ts';
import { runnableJob } from '../../src/app/jobs.ts';
import { addMember, createOrganization } from '../support/organizations.ts';
import { newUser, startTestServer, type TestServer, type TestUser } from '../support/server.ts';
import { workerDeps } from './support.ts';

const creditPeriods = createCreditPeriods();

const balanceAlertCheckHandler = { run: (payload: unknown, context: JobContext) => runJob(runnableJob(balanceAlertCheckJob), payload, context) };
const balanceAlertEmailHandler = { run: (payload: unknown, context: JobContext) => runJob(runnableJob(balanceAlertEmailJob), payload, context) };

describe('low-balance alerts (billing.balance-alert-check handler)', () => {
  let server: TestServer;
  let deps: Deps;
  let context: JobContext;
  let close: () => Promise<void>;
  let owner: TestUser;
  let org: string;

  before(async () => {
    server = await startTestServer({ STARTER_CREDITS: '1000' });
    ({ deps, context, close } = await workerDeps());
  });
  after(async () => {
    await server.stop();
    await close();
  });
  beforeEach(async () => {
    owner = newUser();
    org = await createOrganization(server, owner);
    await addMember(deps.db, org, newUser(), 'member'); // not in notify_roles
    await deps
      .db('organization_alert_policies')
      .insert({ organization_id: org, enabled: true, low_balance_thresholds: [500, 100], notify_roles: ['owner'], extra_recipients: ['ops@acme.test'] });
  });

  const spend = (amount: number) =>
    deps.db.transaction(async (trx) => {
      const hold = await placeHold(trx, creditPeriods, { organizationId: org, userId: owner.id, amount, reason: 'chat_run' });
      await captureHold(trx, hold.id, amount);
    });
  const alerts = () => deps.db('activity_events').where({ organization_id: org, action: 'credits.low_balance' }).orderBy('created_at');
  const emailJobs = () =>
    deps.db('pgboss.job').where({ name: balanceAlertEmailJob.name }).whereRaw(`data->>'organization_id' = ?`, [org]).orderBy('created_on').select('id', 'data');

  it('alerts once per threshold crossed downward, to the policy recipients, and re-arms after a refill', async () => {
    await balanceAlertCheckHandler.run({ organization_id: org }, context);
    expect(await alerts()).to.have.length(0); // 1000 is above every threshold

    await spend(600); // 1000 → 400 crosses 500
    await balanceAlertCheckHandler.run({ organization_id: org }, context);
    await balanceAlertCheckHandler.run({ organization_id: org }, context);
    await balanceAlertCheckHandler.run({}, context);
    let entries = await alerts();
    expect(entries.map((e) => [e.data.threshold, e.data.available])).to.deep.equal([[500, 400]]);
    let jobs = await emailJobs();
    expect(jobs.map((j) => j.data.to).sort()).to.deep.equal(['ops@acme.test', owner.email.toLowerCase()].sort());
    expect(jobs[0].data.subject).to.contain('alert threshold 500');

    await spend(350); // 400 → 50 crosses 100
    await balanceAlertCheckHandler.run({ organization_id: org }, context);
    entries = await alerts();
    expect(entries.map((e) => e.data.threshold)).to.deep.equal([500, 100]);

    await deps.db.transaction((trx) => grantCredits(trx, { organizationId: org, source: 'adjustment', amount: 900, description: 'top-up' })); // 50 → 950
    await balanceAlertCheckHandler.run({ organization_id: org }, context);
    expect(await alerts()).to.have.length(2);
    await spend(500); // 950 → 450 crosses 500 again
    await balanceAlertCheckHandler.run({ organization_id: org }, context);
    entries = await alerts();
    expect(entries.map((e) => e.data.threshold)).to.deep.equal([500, 100, 500]);
    jobs = await emailJobs();
    expect(jobs).to.have.length(6);
  });

  it('sends each alert e-mail once, however often its job runs', async () => {
    await spend(600);
    await balanceAlertCheckHandler.run({ organization_id: org }, context);
    const [job] = await emailJobs();
    await balanceAlertEmailHandler.run(job.data, context);
    await balanceAlertEmailHandler.run(job.data, context);
    // The key names the recipient by its SHA-256 only: the job console shows keys, never addresses.
    expect(job.data.idempotency_key).to.match(/^balance-alert:[0-9a-f-]{36}:[0-9a-f]{64}$/);
    expect(job.data.idempotency_key).not.to.contain('@');
    expect(job.data.idempotency_key.endsWith(createHash('sha256').update(job.data.to).digest('hex'))).to.equal(true);
    const sent = await deps.db('email_outbox').where({ idempotency_key: job.data.idempotency_key });
    expect(sent).to.have.length(1);
    expect(sent[0]).to.include({ to_address: job.data.to, subject: job.data.subject });
  });

  it('stays silent when the policy is disabled', async () => {
    await deps.db('organization_alert_policies').where({ organization_id: org }).update({ enabled: false });
    await spend(950);
    await balanceAlertCheckHandler.run({ organization_id: org }, context);
    expect(await alerts()).to.have.length(0);
    expect(await emailJobs()).to.have.length(0);
  });
});
