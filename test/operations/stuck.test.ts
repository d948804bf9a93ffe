import { expect } from 'chai';
import { z } from 'zod';
import { createDb, type Db } from '../../src/db/knex.ts';
import { createBoss, ensureQueues } from '../../src/jobs/boss.ts';
import type { JobContext } from '../../src/jobs/define.ts';
import { testJob } from '../support/jobs.ts';
import { JobQueue } from '../../src/jobs/enqueue.ts';
import { runCli } from '../../src/operations/cli.ts';
import { createLogger } from '../../src/platform/logger.ts';
import { startWorker, type WorkerProcess } from '../../workers/main.ts';
import { testConfig } from '../support/config.ts';
import { eventually } from '../support/eventually.ts';
import { createOrganization, newOperator, newUser, type TestUser } from '../support/factories.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { isolatedDatabase } from '../jobs/support.ts';
import { show } from './support.ts';

/** Handlers of the test's kinds hold until their abort signal fires; the ids whose signal fired. */
const aborted: string[] = [];
const holdUntilAborted = () =>
  Promise.resolve(async (_payload: { n: number }, { signal, job }: JobContext) => {
    await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
    aborted.push(job.id);
    throw new Error('stopped: the job was cancelled');
  });

/** Usually done within a second: holding, it is stuck a second after it starts. */
const hangingJob = testJob({
  name: 'test.hanging',
  version: 1,
  nature: 'computes',
  payload: z.object({ n: z.number() }).strict(),
  expectedSeconds: 1,
  policy: { retryLimit: 0 },
  handler: holdUntilAborted,
});

/** Usually takes an hour: holding for the test's few seconds, it is within its expected time. */
const patientJob = testJob({
  name: 'test.patient',
  version: 1,
  nature: 'computes',
  payload: z.object({ n: z.number() }).strict(),
  expectedSeconds: 3600,
  policy: { retryLimit: 0 },
  handler: holdUntilAborted,
});

/** Nobody works it: claimed by hand, its "worker" is one already lost (no heartbeat to go stale either). */
const orphanJob = testJob({
  name: 'test.orphan',
  version: 1,
  nature: 'computes',
  payload: z.object({ n: z.number() }).strict(),
  expectedSeconds: 1,
  policy: { retryLimit: 0, heartbeatSeconds: null },
  handler: holdUntilAborted,
});

/**
 * Stuck work is seen (issue 18, item 6): a job running past its kind's expected time on a live worker
 * is flagged in the job list and detail, the `stuck=true` filter, queue health, its alert, /metrics,
 * the CLI — and one within its expected time, or on a dead worker, is not. A real web process and an
 * in-process worker on a database of their own.
 */
describe('job console: stuck attempts', function () {
  this.timeout(60_000);
  const METRICS_TOKEN = 'metrics-token-for-the-stuck-test';
  let url: string;
  let db: Db;
  let server: TestServer;
  let worker: WorkerProcess;
  let queue: JobQueue;
  let sender: ReturnType<typeof createBoss>;
  let operator: TestUser;
  let owner: TestUser;
  let org: string;
  const get = (path: string, token: string, query?: Record<string, string>) => server.request('get', path, { token, ...(query && { query }) });
  const post = (path: string, token: string, body: unknown = {}) => server.request('post', path, { token, body });
  const send = (job: typeof hangingJob, n: number) => db.transaction((trx) => queue.enqueue(trx, job, { n }, { organizationId: org }));
  const cli = async (argv: string[]) => {
    let stdout = '';
    let stderr = '';
    const code = await runCli([...argv, '--url', server.url, '--token', operator.token], {
      fetch: globalThis.fetch,
      stdout: { write: (text: string) => (stdout += text) },
      stderr: { write: (text: string) => (stderr += text) },
      env: {},
    });
    return { code, stdout, stderr };
  };

  before(async () => {
    url = await isolatedDatabase();
    const release = createBoss(url, 'release');
    await release.start();
    await ensureQueues(release, [hangingJob, patientJob, orphanJob]);
    await release.stop({ graceful: false, close: true });
    db = createDb(url, { max: 4 });
    server = await startTestServer({ METRICS_TOKEN }, { databaseUrl: url });
    const config = testConfig({ WORKER_HEARTBEAT_SECONDS: '0.5' });
    worker = await startWorker(config, url, createLogger(config, 'test-worker'), { jobs: [hangingJob, patientJob] });
    sender = createBoss(url, 'web');
    await sender.start();
    queue = new JobQueue(sender, [hangingJob, patientJob, orphanJob]);
    operator = newOperator();
    owner = newUser();
    org = await createOrganization(server, owner);
  });
  after(async () => {
    await worker?.stop();
    await server?.stop();
    await sender?.stop({ graceful: false, close: true });
    await db?.destroy();
  });

  it('release records each kind’s expected time', async () => {
    const kinds = await db('job_kinds')
      .whereIn('queue', [hangingJob.name, patientJob.name, orphanJob.name])
      .orderBy('queue')
      .select('queue', 'expected_seconds');
    expect(kinds).to.deep.equal([
      { queue: hangingJob.name, expected_seconds: 1 },
      { queue: orphanJob.name, expected_seconds: 1 },
      { queue: patientJob.name, expected_seconds: 3600 },
    ]);
  });

  it('a job past its expected time on a live worker is stuck in the list, its detail, queue health, alerts, /metrics and the CLI; one within it is not; cancelled through the console, it is no longer', async () => {
    const hanging = await send(hangingJob, 1);
    const patient = await send(patientJob, 2);

    // Held by the live worker (its heartbeat lists both), and past the hanging kind's second.
    const detail = await eventually('the hanging job is shown stuck', async () => {
      const res = await get(`/ops/jobs/${hanging}`, operator.token);
      return res.body.job?.stuck === true && res;
    });
    expect(detail.status, show(detail)).to.equal(200);
    expect(detail.body.job).to.deep.include({ id: hanging, queue: hangingJob.name, state: 'active', stuck: true, expected_seconds: 1 });
    expect(detail.body.job.running_for_seconds).to.be.a('number').and.at.least(1);
    const workers = await get('/ops/workers', operator.token);
    const live = workers.body.items.find((item: { id: string }) => item.id === worker.id);
    expect(live.status).to.equal('live');
    expect(live.in_flight.map((held: { job_id: string }) => held.job_id).sort()).to.deep.equal([hanging, patient].sort());

    const calm = await get(`/ops/jobs/${patient}`, operator.token);
    expect(calm.body.job).to.deep.include({ id: patient, state: 'active', stuck: false, expected_seconds: 3600 });
    expect(calm.body.job.running_for_seconds).to.be.a('number').and.below(3600);

    // The list: both running, one flagged; the filter takes the stuck one only, for operators and the organization's owner.
    const list = await get('/ops/jobs', operator.token);
    expect(list.status, show(list)).to.equal(200);
    const flags = Object.fromEntries(
      list.body.items.filter((job: { id: string }) => [hanging, patient].includes(job.id)).map((job: { id: string; stuck: boolean }) => [job.id, job.stuck]),
    );
    expect(flags).to.deep.equal({ [hanging]: true, [patient]: false });
    const stuck = await get('/ops/jobs', operator.token, { stuck: 'true' });
    expect(stuck.status, show(stuck)).to.equal(200);
    expect(stuck.body.items.map((job: { id: string }) => job.id)).to.deep.equal([hanging]);
    expect(new Date(stuck.body.window.to).getTime() - new Date(stuck.body.window.from).getTime()).to.equal(31 * 24 * 3600_000);
    const mine = await get('/ops/jobs', owner.token, { stuck: 'true', organization_id: org });
    expect(mine.body.items.map((job: { id: string }) => job.id)).to.deep.equal([hanging]);
    expect((await get('/ops/jobs', operator.token, { stuck: 'yes' })).status).to.equal(400);

    // Queue health: the count per queue, and the alert naming the stuck job.
    const queues = await get('/ops/queues', operator.token);
    expect(queues.status, show(queues)).to.equal(200);
    const hangingQueue = queues.body.items.find((item: { name: string }) => item.name === hangingJob.name);
    const patientQueue = queues.body.items.find((item: { name: string }) => item.name === patientJob.name);
    expect(hangingQueue.stuck_attempts).to.equal(1);
    expect(patientQueue.stuck_attempts).to.equal(0);
    const alert = hangingQueue.alerts.find((item: { kind: string }) => item.kind === 'stuck_attempts');
    expect(alert).to.deep.include({ kind: 'stuck_attempts', value: 1, threshold: 0, job_id: hanging });
    expect(alert.message).to.match(new RegExp(`^1 attempt is running past the expected 1 s on a live worker; the longest, job ${hanging}, for \\d+ s$`));
    expect(patientQueue.alerts.map((item: { kind: string }) => item.kind)).to.deep.equal([]);
    expect(queues.body.alerts.filter((item: { kind: string }) => item.kind === 'stuck_attempts')).to.deep.equal([{ ...alert, queue: hangingJob.name }]);
    const ownQueues = await get('/ops/queues', owner.token, { organization_id: org });
    expect(ownQueues.body.items.find((item: { name: string }) => item.name === hangingJob.name).stuck_attempts).to.equal(1);

    // /metrics: the alert through the alert gauge, and the stuck attempts per queue.
    const scrape = await fetch(`${server.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
    const text = await scrape.text();
    expect(text).to.include(`job_queue_alert{queue="${hangingJob.name}",kind="stuck_attempts",process="web"} 1\n`);
    expect(text).to.include(`job_queue_stuck_attempts{queue="${hangingJob.name}",process="web"} 1\n`);
    expect(text).to.include(`job_queue_stuck_attempts{queue="${patientJob.name}",process="web"} 0\n`);
    expect(text).to.not.match(new RegExp(`job_queue_alert\\{queue="${patientJob.name.replaceAll('.', '\\.')}"`));

    // The CLI: `jobs list --stuck`, the state column of `jobs show`, the queues' summary lines.
    const listed = await cli(['jobs', 'list', '--stuck']);
    expect(listed.code, listed.stderr).to.equal(0);
    const [header, ...rows] = listed.stdout.split('\n');
    expect(header).to.match(/^ID\s+QUEUE\s+STATE\s+ORGANIZATION\s+ATTEMPTS\s+CREATED\s+REQUEST$/);
    expect(rows.filter((row) => /^[0-9a-f-]{36} /.test(row)).map((row) => row.slice(0, 36))).to.deep.equal([hanging]);
    expect(rows[0]).to.match(new RegExp(`^${hanging}\\s+${hangingJob.name.replaceAll('.', '\\.')}\\s+active \\(stuck: \\d+s, expected 1s\\)\\s+${org}\\s`));
    expect(listed.stdout).to.match(/^1 of ~?\d+ stuck jobs created /m);
    const shown = await cli(['jobs', 'show', hanging]);
    expect(shown.stdout).to.match(/^state:\s+active \(stuck: \d+s, expected 1s\)$/m);
    expect(shown.stdout).to.match(/^running:\s+\d+s, expected 1s$/m);
    const patientShown = await cli(['jobs', 'show', patient]);
    expect(patientShown.stdout).to.match(/^state:\s+active$/m);
    expect(patientShown.stdout).to.match(/^running:\s+\d+s, expected 60m$/m);
    const health = await cli(['queues']);
    expect(health.code, health.stderr).to.equal(0);
    expect(health.stdout).to.include(`\nSTUCK ${hangingJob.name}: 1 (npm run ops -- jobs list --stuck --queue ${hangingJob.name})\n`);
    expect(health.stdout).to.include(`\nALERT ${hangingJob.name}: 1 attempt is running past the expected 1 s on a live worker; the longest, job ${hanging}`);
    expect(health.stdout).to.not.include(`STUCK ${patientJob.name}`);

    // Cancelled through the console: its handler is told, and nothing is stuck any more.
    const cancelled = await post(`/ops/jobs/${hanging}/cancel`, operator.token, { reason: 'stuck on an upstream' });
    expect(cancelled.status, show(cancelled)).to.equal(200);
    expect(cancelled.body.job).to.deep.include({ id: hanging, state: 'cancelled', stuck: false, running_for_seconds: null, expected_seconds: null });
    await eventually('the hanging handler saw its abort signal', async () => aborted.includes(hanging));
    expect((await get('/ops/jobs', operator.token, { stuck: 'true' })).body.items).to.deep.equal([]);
    const after = await get('/ops/queues', operator.token);
    const cleared = after.body.items.find((item: { name: string }) => item.name === hangingJob.name);
    expect(cleared.stuck_attempts).to.equal(0);
    expect(cleared.alerts.map((item: { kind: string }) => item.kind)).to.not.include('stuck_attempts');
    expect((await get(`/ops/jobs/${hanging}`, operator.token)).body.job).to.deep.include({ state: 'cancelled', stuck: false });

    expect((await post(`/ops/jobs/${patient}/cancel`, operator.token)).status).to.equal(200);
    await eventually('the patient handler saw its abort signal', async () => aborted.includes(patient));
  });

  it('an attempt past its expected time whose worker is dead is not stuck (it is the lost-worker path)', async () => {
    const id = await send(orphanJob, 3);
    const [claimed] = await sender.fetch(orphanJob.name);
    expect(claimed?.id).to.equal(id);
    // The worker that claimed it was already found lost: its last heartbeat still lists the attempt.
    await db('job_workers').insert({
      id: crypto.randomUUID(),
      host: 'gone-host',
      pid: 1,
      version: 'test',
      queues: [orphanJob.name],
      concurrency: 1,
      in_flight: JSON.stringify([{ job_id: id, queue: orphanJob.name, attempt: 0, organization_id: org, started_at: new Date().toISOString() }]),
      last_heartbeat_at: db.raw(`now() - interval '5 minutes'`),
      lost_at: db.raw('now()'),
    });
    await db('pgboss.job')
      .where({ id })
      .update({ started_on: db.raw(`now() - interval '1 minute'`) });

    const detail = await get(`/ops/jobs/${id}`, operator.token);
    expect(detail.body.job).to.deep.include({ state: 'active', stuck: false, expected_seconds: 1 });
    expect(detail.body.job.running_for_seconds).to.be.at.least(60);
    expect((await get('/ops/jobs', operator.token, { stuck: 'true' })).body.items).to.deep.equal([]);
    const queues = await get('/ops/queues', operator.token);
    expect(queues.body.items.find((item: { name: string }) => item.name === orphanJob.name).stuck_attempts).to.equal(0);
    expect((await post(`/ops/jobs/${id}/cancel`, operator.token)).status).to.equal(200);
  });
});
