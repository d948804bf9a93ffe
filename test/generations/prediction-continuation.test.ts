import { expect } from 'chai';
import { grantCredits } from '../../src/credits/ledger.ts';
import { reconcileCredits } from '../../src/credits/reconcile.ts';
import { createDb, type Db } from '../../src/db/knex.ts';
import { generationJob } from '../../src/generations/jobs.ts';
import { eventually, isolatedDatabase, spawnWorker } from '../jobs/support.ts';
import { createOrganization, newOperator, newUser, type TestUser } from '../support/factories.ts';
import { deliver, type FakePredictionService, startPredictionService } from '../support/prediction-service.ts';
import { useChildProcesses } from '../support/processes.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

/** How long each fake prediction runs (PREDICTION_TEST_SECONDS; the figure is 20). */
const PREDICTION_SECONDS = Number(process.env.PREDICTION_TEST_SECONDS ?? 10);
/** The webhook's signing secret, as the service shows it. */
const WEBHOOK_SECRET = `whsec_${Buffer.from('the prediction service webhook key').toString('base64')}`;

/**
 * Issue 34 item 3, with real worker processes: a prediction's generation submits upstream, records
 * the prediction's id, then its job continues as a snooze — no slot held while the prediction runs —
 * and each later attempt resumes polling that prediction. 50 generations on a worker with 4 slots
 * (2 per organization) all wait upstream at once; cancels during the wait settle without a worker;
 * a worker SIGKILLed during the wait loses nothing; the timeout still ends it.
 */
describe('generations: a prediction waits as a continuation, holding no slot', function () {
  this.timeout(240_000);
  let url: string;
  let db: Db;
  let server: TestServer;
  let service: FakePredictionService;
  let alice: TestUser;
  let org: string;
  const worker = useChildProcesses((env: Record<string, string> = {}) =>
    spawnWorker(url, {
      GENERATION_PREDICTION_URL: service.url,
      WORKER_CONCURRENCY: '4',
      // Every wait continues (the first poll's 250 ms included), so an attempt holds its slot for a round trip or two.
      JOB_WAIT_BOUND_SECONDS: '0',
      WORKER_POLL_INTERVAL_SECONDS: '0.5',
      ...env,
    }),
  );

  before(async () => {
    service = await startPredictionService({ seconds: PREDICTION_SECONDS });
    url = await isolatedDatabase();
    db = createDb(url, { max: 4 });
    server = await startTestServer({ GENERATION_PREDICTION_URL: service.url, GENERATION_PREDICTION_WEBHOOK_SECRET: WEBHOOK_SECRET }, { databaseUrl: url });
    alice = newUser();
    org = await createOrganization(server, alice);
    await db.transaction((trx) => grantCredits(trx, { organizationId: org, source: 'purchase', amount: 20_000, description: 'Test credits' }));
  });
  after(async () => {
    await server?.stop();
    await db?.destroy();
    await service?.close();
  });

  async function start(prompt: string): Promise<string> {
    const res = await server.request('post', '/generations', {
      token: alice.token,
      body: { organization_id: org, kind: 'video', model: 'video-prediction', prompt },
    });
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    return res.body.generation.id as string;
  }
  const ended = (ids: string[]) =>
    eventually(`${ids.length} generations ended`, async () => {
      const rows = await db('generations').whereIn('id', ids).whereNotIn('status', ['queued', 'running']).select('*');
      return rows.length === ids.length ? rows : null;
    });
  const jobOf = async (id: string) =>
    (await db('pgboss.job').where({ name: generationJob.name }).whereRaw(`data->>'generation_id' = ?`, [id]).first('id', 'state')) as {
      id: string;
      state: string;
    };
  /** Submitted upstream and waiting between two attempts: the prediction's id recorded, the job snoozed, no attempt holding it. */
  const waiting = (id: string) =>
    eventually(`generation ${id} waits as a continuation`, async () => {
      const row = await db('generations').where({ id }).first('status', 'upstream_job_id');
      const job = await jobOf(id);
      return row.status === 'running' && row.upstream_job_id && job.state === 'retry' ? { job, upstreamJobId: row.upstream_job_id as string } : null;
    });
  /** The credit ledger of a generation's call: `kind:amount` in order. */
  const ledger = async (callId: string) =>
    (
      await db('credit_ledger_entries as e')
        .join('credit_holds as h', 'h.id', 'e.hold_id')
        .where('h.run_id', `metered-call:${callId}`)
        .orderBy('e.seq')
        .select('e.kind', 'e.amount')
    ).map((e) => `${e.kind}:${e.amount}`);
  const createdFor = (generationId: string) => service.predictions.filter((p) => p.idempotencyKey === generationId);

  it('50 generations on 4 slots all wait upstream at once and succeed, each billed once', async () => {
    worker();
    const ids = await Promise.all(Array.from({ length: 50 }, (_, i) => start(`A lighthouse, take ${i}`)));
    const rows = await ended(ids);
    expect(rows.map((row) => row.status)).to.deep.equal(ids.map(() => 'succeeded'));
    // More predictions ran at once than the worker has slots: none of them held one while it ran.
    expect(service.peakRunning()).to.be.greaterThan(4);
    for (const row of rows) {
      expect(row.credits_charged).to.equal(200);
      expect(row.asset_ids).to.have.length(1);
      expect(createdFor(row.id)).to.have.length(1);
      expect(await ledger(row.call_id)).to.deep.equal(['hold:200', 'capture:200']);
    }
    expect(await db('assets').whereIn('generation_id', ids).count({ n: '*' })).to.deep.equal([{ n: 50 }]);
    // Each job continued at least once (a `deferred` attempt) and completed.
    const jobs = await db('pgboss.job').where({ name: generationJob.name }).whereRaw(`data->>'generation_id' = ANY(?)`, [ids]).select('id', 'state');
    expect(jobs.map((job) => job.state)).to.deep.equal(ids.map(() => 'completed'));
    const continued = await db('job_attempt_records')
      .whereIn(
        'job_id',
        jobs.map((job) => job.id),
      )
      .where({ outcome: 'deferred' })
      .countDistinct({ n: 'job_id' });
    expect(continued).to.deep.equal([{ n: 50 }]);
    expect(await reconcileCredits(db, org)).to.deep.equal([]);
  });

  it('a cancel by the API and an operator’s cancel during the wait settle it: canceled, the hold released, no worker needed', async () => {
    worker();
    const byApi = await start('A lighthouse to cancel by its resource');
    const byOperator = await start('A lighthouse an operator cancels');
    await waiting(byApi);
    const { job } = await waiting(byOperator);

    const patched = await server.request('patch', `/generations/${byApi}`, { token: alice.token, body: { status: 'canceled' } });
    expect(patched.status, JSON.stringify(patched.body)).to.equal(200);
    expect(patched.body.generation).to.include({ status: 'canceled' });
    const operator = newOperator();
    const canceled = await server.request('post', `/ops/jobs/${job.id}/cancel`, { token: operator.token, body: { reason: 'stuck upstream' } });
    expect(canceled.status, JSON.stringify(canceled.body)).to.equal(200);
    expect(canceled.body.job.state).to.equal('cancelled');

    const rows = (await db('generations').whereIn('id', [byApi, byOperator]).select('*')).sort((a, b) => (a.id === byApi ? -1 : b.id === byApi ? 1 : 0));
    expect(rows.map((row) => [row.status, row.error.message, row.credits_charged])).to.deep.equal([
      ['canceled', 'canceled by the caller', 0],
      ['canceled', 'canceled by an operator: stuck upstream', 0],
    ]);
    for (const row of rows) expect(await ledger(row.call_id)).to.deep.equal(['hold:200', 'release:200']);
    expect((await jobOf(byApi)).state).to.equal('cancelled');
    // Nobody was waiting on the predictions: a job of their own tells the service to stop them.
    await eventually('both predictions were canceled upstream', async () =>
      [byApi, byOperator].every(
        (id) =>
          createdFor(id)
            .map((p) => p.status)
            .join() === 'canceled',
      ),
    );
    expect(await reconcileCredits(db, org)).to.deep.equal([]);
  });

  it('a worker SIGKILLed during the wait loses nothing: a new worker resumes the same predictions, each billed once', async () => {
    const first = worker();
    const ids = [await start('A lighthouse survives a crash'), await start('Another lighthouse survives a crash')];
    for (const id of ids) await waiting(id);
    process.kill(-first.child.pid!, 'SIGKILL');
    expect((await first.exited).signal).to.equal('SIGKILL');

    worker();
    const rows = await ended(ids);
    for (const row of rows) {
      expect(row).to.include({ status: 'succeeded', credits_charged: 200 });
      expect(createdFor(row.id)).to.have.length(1);
      expect(createdFor(row.id)[0]!.id).to.equal(row.upstream_job_id);
      expect(await ledger(row.call_id)).to.deep.equal(['hold:200', 'capture:200']);
    }
    expect(await reconcileCredits(db, org)).to.deep.equal([]);
  });

  it('the service’s webhook wakes the waiting job at once; a delivery not signed with the secret is refused and wakes nothing', async () => {
    const hook = `${server.url}/webhooks/generation-predictions`;
    worker({ GENERATION_PREDICTION_WEBHOOK_URL: hook });
    const id = await start('A lighthouse stuck until its webhook');
    // Resumed once at least: with a webhook the continuation polls only every 30 s, so the job is not due for a while.
    const upstreamJobId = await eventually('the generation waits on its slow poll', async () => {
      const row = await db('generations as g')
        .join('pgboss.job as j', db.raw(`j.name = ? AND j.data->>'generation_id' = g.id::text`, [generationJob.name]))
        .where('g.id', id)
        .where('j.state', 'retry')
        .whereRaw(`j.start_after > now() + interval '10 seconds'`)
        .first('g.upstream_job_id');
      return row?.upstream_job_id as string | undefined;
    });
    const [prediction] = createdFor(id);
    expect(prediction!.webhook).to.equal(hook);

    const forged = await deliver(hook, `whsec_${Buffer.from('another key').toString('base64')}`, { id: upstreamJobId, status: 'succeeded' });
    expect(forged.status).to.equal(400);
    expect(forged.body.code).to.equal('validation_failed');
    const still = await db('pgboss.job')
      .where({ name: generationJob.name })
      .whereRaw(`data->>'generation_id' = ?`, [id])
      .first('state', db.raw('start_after > now() AS later'));
    expect(still).to.deep.equal({ state: 'retry', later: true });
    const unknown = await deliver(hook, WEBHOOK_SECRET, { id: 'no-such-prediction', status: 'succeeded' });
    expect(unknown).to.deep.equal({ status: 200, body: { received: true, outcome: 'unknown_prediction' } });

    expect(await service.finish(upstreamJobId, WEBHOOK_SECRET)).to.deep.equal({ status: 200, body: { received: true, outcome: 'woken' } });
    const [row] = await ended([id]);
    expect(row).to.include({ status: 'succeeded', credits_charged: 200 });
    expect(await ledger(row.call_id)).to.deep.equal(['hold:200', 'capture:200']);
    // A repeated delivery finds nothing waiting.
    expect(await deliver(hook, WEBHOOK_SECRET, { id: upstreamJobId, status: 'succeeded' })).to.deep.equal({
      status: 200,
      body: { received: true, outcome: 'not_waiting' },
    });
  });

  it('a service that says “come back in 15 s” is not slept on: the job continues after the 15 s, then succeeds, billed once', async () => {
    worker();
    const id = await start('A lighthouse while the service is busy');
    const [row] = await ended([id]);
    expect(row).to.include({ status: 'succeeded', credits_charged: 200 });
    expect(await ledger(row.call_id)).to.deep.equal(['hold:200', 'capture:200']);
    const job = await jobOf(id);
    const deferred = await db('job_attempt_records').where({ job_id: job.id, outcome: 'deferred' }).orderBy('attempt').pluck('error');
    expect(deferred[0].message).to.match(/^snoozed for 15 s: /);
    expect(createdFor(id)).to.have.length(1);
  });

  it('the timeout still ends a prediction that never finishes: failed, the hold released, the prediction canceled upstream', async () => {
    const child = worker({ GENERATION_TIMEOUT_MS: '5000' });
    // The budget counts from acceptance: the worker is up first, so the prediction starts within it.
    await eventually('the worker is up', async () => (await db('job_workers').where({ pid: child.child.pid, stopped_at: null }).first('id')) !== undefined);
    const id = await start('A lighthouse stuck at the provider');
    const [row] = await ended([id]);
    expect(row).to.include({ status: 'failed', credits_charged: 0 });
    expect(row.error.code).to.equal('timeout');
    expect(await ledger(row.call_id)).to.deep.equal(['hold:200', 'release:200']);
    expect(createdFor(id).map((p) => p.status)).to.deep.equal(['canceled']);
    expect(await reconcileCredits(db, org)).to.deep.equal([]);
  });
});
