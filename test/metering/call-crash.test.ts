import type { IncomingMessage, ServerResponse } from 'node:http';
import { expect } from 'chai';
import { grantCredits } from '../../src/credits/ledger.ts';
import { reconcileCredits } from '../../src/credits/reconcile.ts';
import { createDb, type Db } from '../../src/db/knex.ts';
import { meteredCallJob } from '../../src/metering/index.ts';
import { settleReadResult } from '../../src/metering/settle.ts';
import { eventually, isolatedDatabase, spawnWorker, retryDeadAttemptsQuickly } from '../jobs/support.ts';
import { createOrganization, newUser, type TestUser } from '../support/factories.ts';
import { useChildProcesses } from '../support/processes.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { startUpstream, type FakeUpstream } from '../support/upstream.ts';

/**
 * A worker process SIGKILLed while its metered call waits on the provider: the hold is held, the
 * call open, the job active. Whatever happens next — the retried job on a survivor finishes it, or
 * the waiting request gives up first — the call settles exactly once and the ledger reconciles.
 */
describe('metered calls: worker killed between accept and settle', function () {
  this.timeout(90_000);
  /**
   * A fake social service whose first request per username hangs (its worker is about to die), a web
   * process (READ_TIMEOUT_MS as given) and a database whose call queue retries a dead attempt 10 s
   * after its last heartbeat.
   */
  function useStack(readTimeoutMs: number) {
    const stack = {} as { url: string; db: Db; server: TestServer; upstream: FakeUpstream; alice: TestUser; org: string };
    const hits: Record<string, number> = {};
    const hanging: ServerResponse[] = [];
    const worker = useChildProcesses(() =>
      spawnWorker(stack.url, { SOCIAL_API_URL: stack.upstream.url, READ_TIMEOUT_MS: String(readTimeoutMs), WORKER_POLL_INTERVAL_SECONDS: '1' }),
    );
    before(async () => {
      stack.upstream = await startUpstream({
        '/v1/social/net2_profile': (req: IncomingMessage, res: ServerResponse) => {
          let text = '';
          req.on('data', (chunk) => (text += chunk));
          req.on('end', () => {
            const { username } = JSON.parse(text).input as { username: string };
            hits[username] = (hits[username] ?? 0) + 1;
            if (hits[username] === 1) return void hanging.push(res);
            res.writeHead(200, { 'content-type': 'application/json' });
            res.end(JSON.stringify({ result: { username, summary: `@${username}, second time lucky` }, pages: 1 }));
          });
        },
      });
      stack.url = await isolatedDatabase();
      stack.db = createDb(stack.url, { max: 3 });
      await retryDeadAttemptsQuickly(stack.url, meteredCallJob.name);
      stack.server = await startTestServer({ READ_TIMEOUT_MS: String(readTimeoutMs) }, { databaseUrl: stack.url });
      stack.alice = newUser();
      stack.org = await createOrganization(stack.server, stack.alice);
      await stack.db.transaction((trx) => grantCredits(trx, { organizationId: stack.org, source: 'purchase', amount: 100, description: 'Test credits' }));
    });
    after(async () => {
      for (const res of hanging) res.destroy();
      await stack.server?.stop();
      await stack.db?.destroy();
      await stack.upstream?.close();
    });
    const read = (username: string) =>
      stack.server.request('post', '/social/net2_profile', { token: stack.alice.token, body: { organization_id: stack.org, input: { username } } });
    const callOf = (username: string) => stack.db('metered_calls').whereRaw(`input->>'username' = ?`, [username]).first();
    const ledgerOf = async (callId: string) =>
      (
        await stack
          .db('credit_ledger_entries as e')
          .join('credit_holds as h', 'h.id', 'e.hold_id')
          .where('h.run_id', `metered-call:${callId}`)
          .orderBy('e.seq')
          .select('e.kind', 'e.amount')
      ).map((e) => `${e.kind}:${e.amount}`);
    const jobOf = (callId: string) =>
      stack.db('pgboss.job').where({ name: meteredCallJob.name }).whereRaw(`data->>'call_id' = ?`, [callId]).first('state', 'retry_count');
    /** Starts a read, waits until the worker is inside the provider call, SIGKILLs it. */
    async function killMidCall(username: string) {
      const first = worker();
      // Started (registered in job_workers) before the read, so a short READ_TIMEOUT_MS measures the call, not the worker's start-up.
      await eventually('the worker is up', async () => !!(await stack.db('job_workers').where({ pid: first.child.pid }).whereNull('stopped_at').first('id')));
      const pending = read(username);
      await eventually(`the upstream got the request for ${username}`, async () => hits[username] === 1);
      const call = await callOf(username);
      expect(call).to.include({ status: 'running' });
      process.kill(-first.child.pid!, 'SIGKILL');
      expect((await first.exited).signal).to.equal('SIGKILL');
      return { pending, call };
    }
    return { stack, hits, worker, read, callOf, ledgerOf, jobOf, killMidCall };
  }

  describe('the retried job on a survivor finishes the call', () => {
    const t = useStack(60_000);

    it('captures exactly once and answers the waiting request', async () => {
      const { pending, call } = await t.killMidCall('ada');
      expect(await t.ledgerOf(call.id)).to.deep.equal(['hold:1']);
      t.worker();
      const res = await pending;
      expect(res.status).to.equal(200);
      expect(res.body).to.deep.equal({
        operation: 'net2_profile',
        result: { username: 'ada', summary: '@ada, second time lucky' },
        requests: 1,
        credits_charged: 1,
      });
      expect(t.hits.ada).to.equal(2);
      expect(await t.ledgerOf(call.id)).to.deep.equal(['hold:1', 'capture:1']);
      await eventually('the job completed', async () => (await t.jobOf(call.id))?.state === 'completed');
      expect(await t.jobOf(call.id)).to.deep.equal({ state: 'completed', retry_count: 1 });
      expect(await reconcileCredits(t.stack.db, t.stack.org)).to.deep.equal([]);
    });
  });

  describe('the waiting request gives up first', () => {
    const t = useStack(3_000);

    it('504 cancels the job and releases the hold; a worker started later runs nothing and charges nothing', async () => {
      const { pending, call } = await t.killMidCall('grace');
      const res = await pending;
      expect(res.status).to.equal(504);
      expect(res.body.code).to.equal('upstream_timeout');
      expect(await t.callOf('grace')).to.deep.include({ status: 'failed', credits_charged: 0, error: { code: 'timeout', message: 'no answer in time' } });
      expect(await t.ledgerOf(call.id)).to.deep.equal(['hold:1', 'release:1']);
      // The timeout ended the job with the call: nothing is left to retry.
      expect(await t.jobOf(call.id)).to.deep.equal({ state: 'cancelled', retry_count: 0 });
      t.worker();
      await new Promise((resolve) => setTimeout(resolve, 2_000));
      expect(await t.jobOf(call.id)).to.deep.equal({ state: 'cancelled', retry_count: 0 });
      expect(t.hits.grace).to.equal(1); // nothing called the provider again
      expect(await t.ledgerOf(call.id)).to.deep.equal(['hold:1', 'release:1']);
      expect(await reconcileCredits(t.stack.db, t.stack.org)).to.deep.equal([]);
    });

    it('killed after its end committed the result, before posting the capture: the request posts it when it gives up and answers 200, charged once', async () => {
      const { pending, call } = await t.killMidCall('hopper');
      // What the dead worker's ending transaction committed: its job completed, the call settled with
      // its result and the read's capture pending on the hold; the post after that commit never ran.
      await t.stack.db.transaction(async (trx) => {
        await trx('pgboss.job')
          .where({ name: meteredCallJob.name })
          .whereRaw(`data->>'call_id' = ?`, [call.id])
          .update({ state: 'completed', completed_on: trx.fn.now() });
        const post = await settleReadResult(trx, t.stack.db, call.id, {
          status: 'succeeded',
          result: { username: 'hopper', summary: '@hopper' },
          pages: 1,
          credits: 1,
        });
        expect(post).to.be.a('function');
      });
      expect(await t.ledgerOf(call.id)).to.deep.equal(['hold:1']);
      const res = await pending;
      expect(res.status).to.equal(200);
      expect(res.body).to.deep.equal({ operation: 'net2_profile', result: { username: 'hopper', summary: '@hopper' }, requests: 1, credits_charged: 1 });
      expect(await t.ledgerOf(call.id)).to.deep.equal(['hold:1', 'capture:1']);
      expect(
        await t.stack
          .db('credit_holds')
          .where({ run_id: `metered-call:${call.id}` })
          .first('status', 'captured'),
      ).to.deep.equal({ status: 'captured', captured: 1 });
      expect(await reconcileCredits(t.stack.db, t.stack.org)).to.deep.equal([]);
    });
  });
});
