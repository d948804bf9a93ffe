import { expect } from 'chai';
import { grantCredits } from '../../src/credits/ledger.ts';
import { reconcileCredits } from '../../src/credits/reconcile.ts';
import { createDb, type Db } from '../../src/db/knex.ts';
import { generationJob } from '../../src/generations/jobs.ts';
import { eventually, isolatedDatabase, spawnWorker, retryDeadAttemptsQuickly } from '../jobs/support.ts';
import { createOrganization, newUser, type TestUser } from '../support/factories.ts';
import { useChildProcesses } from '../support/processes.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

/**
 * A worker process SIGKILLed in the middle of a generation: the retried job on a survivor runs it
 * again and the generation ends with one asset and one capture — never two of either.
 */
describe('generations: worker killed mid-generation', function () {
  this.timeout(90_000);
  let url: string;
  let db: Db;
  let server: TestServer;
  let alice: TestUser;
  let org: string;
  const worker = useChildProcesses((delayMs: number) => spawnWorker(url, { GENERATION_SANDBOX_DELAY_MS: String(delayMs), WORKER_POLL_INTERVAL_SECONDS: '1' }));

  before(async () => {
    url = await isolatedDatabase();
    db = createDb(url, { max: 3 });
    await retryDeadAttemptsQuickly(url, generationJob.name);
    server = await startTestServer({}, { databaseUrl: url });
    alice = newUser();
    org = await createOrganization(server, alice);
    await db.transaction((trx) => grantCredits(trx, { organizationId: org, source: 'purchase', amount: 100, description: 'Test credits' }));
  });
  after(async () => {
    await server?.stop();
    await db?.destroy();
  });

  it('the survivor finishes it: one asset, one capture, the job retried once', async () => {
    const res = await server.request('post', '/generations', {
      token: alice.token,
      body: { organization_id: org, kind: 'image', prompt: 'A lighthouse in fog' },
    });
    expect(res.status).to.equal(201);
    const id = res.body.generation.id as string;
    const slow = worker(60_000);
    await eventually('the generation is running', async () => (await db('generations').where({ id }).first('status')).status === 'running');
    process.kill(-slow.child.pid!, 'SIGKILL');
    expect((await slow.exited).signal).to.equal('SIGKILL');

    worker(0);
    const done = await eventually('the generation ended', async () => {
      const row = await db('generations').where({ id }).first();
      return row.status === 'running' || row.status === 'queued' ? null : row;
    });
    expect(done).to.include({ status: 'succeeded', credits_charged: 4 });
    expect(await db('assets').where({ generation_id: id }).pluck('id')).to.deep.equal(done.asset_ids);
    expect(done.asset_ids).to.have.length(1);
    const entries = await db('credit_ledger_entries as e')
      .join('credit_holds as h', 'h.id', 'e.hold_id')
      .where('h.run_id', `metered-call:${done.call_id}`)
      .orderBy('e.seq')
      .select('e.kind', 'e.amount');
    expect(entries.map((e) => `${e.kind}:${e.amount}`)).to.deep.equal(['hold:4', 'capture:4']);
    const job = await db('pgboss.job').where({ name: generationJob.name }).whereRaw(`data->>'generation_id' = ?`, [id]).first('state', 'retry_count');
    expect(job).to.deep.equal({ state: 'completed', retry_count: 1 });
    expect(await reconcileCredits(db, org)).to.deep.equal([]);
  });
});
