import { expect } from 'chai';
import { z } from 'zod';
import { allJobs } from '../../src/app/jobs.ts';
import { createBoss, ensureQueues } from '../../src/jobs/boss.ts';
import { testJob } from '../support/jobs.ts';
import { JobQueue } from '../../src/jobs/enqueue.ts';
import { createDb, type Db } from '../../src/db/knex.ts';
import { createLogger } from '../../src/platform/logger.ts';
import { startWorker, type WorkerProcess } from '../../workers/main.ts';
import { testConfig } from '../support/config.ts';
import { eventually } from '../support/eventually.ts';
import { createOrganization, newMember, newOperator, newUser } from '../support/factories.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { isolatedDatabase } from './support.ts';

/** What a careless handler's error carries: an address, a file path, a signed URL with credentials, a bearer token. */
const LEAKY_MESSAGE =
  "could not mail ada.lovelace@example.com the report: open '/home/deploy/app/reports/ada.pdf' failed; " +
  'GET https://bob:hunter2@storage.example.com/v1/reports?X-Amz-Signature=abc123def456 answered 403 (Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhZGEifQ.c2lnbmF0dXJl)';
const REDACTED_MESSAGE =
  "could not mail <email> the report: open '<path>' failed; GET https://<credentials>@storage.example.com/v1/reports?<query> answered 403 (Authorization: Bearer <secret>)";
const SECRETS = ['ada.lovelace@example.com', '/home/deploy', 'hunter2', 'abc123def456', 'eyJhbGciOiJIUzI1NiJ9', 'stack', '/work/', 'file://'];

const leakyJob = testJob({
  name: 'test.leaky',
  version: 1,
  nature: 'computes',
  payload: z.object({ n: z.number() }).strict(),
  policy: { retryLimit: 1, retryDelaySeconds: 2, retryBackoff: true, retryDelayMaxSeconds: 2, heartbeatSeconds: null },
  handler: () =>
    Promise.resolve(async () => {
      throw Object.assign(new Error(LEAKY_MESSAGE), { code: 'report_mail_failed', detail: 'ada.lovelace@example.com' });
    }),
});

describe('stored job errors are redacted by schema (issue 19 item 4)', function () {
  this.timeout(60_000);
  let db: Db;
  let server: TestServer;
  let worker: WorkerProcess;
  let queue: JobQueue;
  let boss: ReturnType<typeof createBoss>;

  before(async () => {
    const url = await isolatedDatabase();
    const release = createBoss(url, 'release');
    await release.start();
    await ensureQueues(release, [leakyJob]);
    await release.stop({ graceful: false, close: true });
    db = createDb(url, { max: 4 });
    server = await startTestServer({}, { databaseUrl: url });
    const config = testConfig({ WORKER_POLL_INTERVAL_SECONDS: '0.5' });
    worker = await startWorker(config, url, createLogger(config, 'test-worker'), { jobs: [...allJobs, leakyJob] });
    boss = createBoss(url, 'web');
    await boss.start();
    queue = new JobQueue(boss, [...allJobs, leakyJob]);
  });
  after(async () => {
    await worker?.stop();
    await server?.stop();
    await boss?.stop({ graceful: false, close: true });
    await db?.destroy();
  });

  const expectClean = (what: string, value: unknown) => {
    const text = JSON.stringify(value);
    for (const secret of SECRETS) expect(text, `${what} shows ${secret}`).to.not.include(secret);
  };

  it('a handler error with an e-mail address, a path, credentials and a token: pg-boss output, attempts, job end and the console show only the redacted record', async () => {
    const owner = newUser();
    const org = await createOrganization(server, owner);
    const admin = await newMember(db, org, 'admin');
    const id = await db.transaction((trx) => queue.enqueue(trx, leakyJob, { n: 1 }, { organizationId: org }));
    const record = { code: 'report_mail_failed', message: REDACTED_MESSAGE, redacted: true };

    // The first attempt failed and will be retried: pg-boss stored what the runtime rethrew.
    const retrying = await eventually('the first attempt failed', async () => {
      const row = await db('pgboss.job').where({ id }).first('state', 'output');
      return row?.state === 'retry' && row;
    });
    expect(retrying.output).to.deep.equal(record);

    const failed = await eventually('the job failed for good', async () => {
      const row = await db('pgboss.job').where({ id }).first('state', 'output');
      return row?.state === 'failed' && row;
    });
    expect(failed.output).to.deep.equal(record);
    const attempts = await eventually('both attempts are recorded, ended', async () => {
      const rows = await db('job_attempts').where({ job_id: id }).whereNotNull('ended_at').orderBy('attempt');
      return rows.length === 2 && rows;
    });
    expect(attempts.map((row: { outcome: string; error: unknown }) => [row.outcome, row.error])).to.deep.equal([
      ['failed', record],
      ['failed', record],
    ]);
    const [end] = await db('job_ends').where({ job_id: id });
    expect(end.reason).to.deep.equal(record);

    // The console: the operator's and the organization admin's view of the job.
    for (const token of [newOperator().token, admin.token]) {
      const detail = await server.request('get', `/ops/jobs/${id}`, { token });
      expect(detail.status, JSON.stringify(detail.body)).to.equal(200);
      expect(detail.body.job.output).to.deep.equal(record);
      expect(detail.body.history.map((attempt: { error: unknown }) => attempt.error)).to.deep.equal([record, record]);
      expect(
        detail.body.timeline.filter((event: { event: string }) => event.event === 'attempt_ended').map((event: { detail: string }) => event.detail),
      ).to.satisfy((details: string[]) => details.length === 2 && details.every((text) => text.startsWith(`failed: ${REDACTED_MESSAGE} (`)));
      expectClean('the console', detail.body);
    }
  });

  it('rows stored before redaction are redacted on the way out', async () => {
    const id = await db.transaction((trx) => queue.enqueue(trx, leakyJob, { n: 2 }, { organizationId: null }));
    await eventually('the job failed for good', async () => (await db('pgboss.job').where({ id }).first('state'))?.state === 'failed');
    await db('pgboss.job')
      .where({ id })
      .update({ output: JSON.stringify({ name: 'Error', message: LEAKY_MESSAGE, stack: `Error: x\n    at run (/work/app/src/jobs/x.ts:1:2)` }) });
    await db('job_attempts')
      .where({ job_id: id })
      .update({ error: JSON.stringify({ message: LEAKY_MESSAGE, name: 'Error' }) });
    const detail = await server.request('get', `/ops/jobs/${id}`, { token: newOperator().token });
    expect(detail.status).to.equal(200);
    expect(detail.body.job.output).to.deep.equal({ code: 'failed', message: REDACTED_MESSAGE, redacted: true });
    expect(detail.body.history[0].error).to.deep.equal({ code: 'failed', message: REDACTED_MESSAGE, redacted: true });
    expectClean('the console', detail.body);
  });
});
