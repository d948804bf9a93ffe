import type { IncomingMessage, ServerResponse } from 'node:http';
import { expect } from 'chai';
import { testConfig } from '../support/config.ts';
import { grantCredits } from '../../src/credits/ledger.ts';
import { reconcileCredits } from '../../src/credits/reconcile.ts';
import { createDb, type Db } from '../../src/db/knex.ts';
import { meteredCallJob } from '../../src/metering/index.ts';
import { isolatedDatabase, spawnWorker } from '../jobs/support.ts';
import { createOrganization, newUser, type TestUser } from '../support/factories.ts';
import { useChildProcesses } from '../support/processes.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { startUpstream, type FakeUpstream } from '../support/upstream.ts';

describe('provider limits (PROVIDER_LIMITS, issue 34)', function () {
  this.timeout(150_000);
  let url: string;
  let db: Db;
  let server: TestServer;
  let upstream: FakeUpstream;
  let alice: TestUser;
  let org: string;
  /** Requests the fake social service is answering right now, and the most it ever answered at once. */
  const load = { now: 0, peak: 0, total: 0 };
  const worker = useChildProcesses((env: Record<string, string>) => spawnWorker(url, env));

  before(async () => {
    upstream = await startUpstream({
      '/v1/social/net2_profile': (req: IncomingMessage, res: ServerResponse) => {
        let text = '';
        req.on('data', (chunk) => (text += chunk));
        req.on('end', () => {
          load.now += 1;
          load.total += 1;
          load.peak = Math.max(load.peak, load.now);
          const { username } = JSON.parse(text).input as { username: string };
          setTimeout(() => {
            load.now -= 1;
            res.writeHead(200, { 'content-type': 'application/json' });
            res.end(JSON.stringify({ result: { username, summary: `@${username}` }, pages: 1 }));
          }, 400);
        });
      },
    });
    url = await isolatedDatabase();
    db = createDb(url, { max: 3 });
    server = await startTestServer({ READ_TIMEOUT_MS: '60000' }, { databaseUrl: url });
    alice = newUser();
    org = await createOrganization(server, alice);
    await db.transaction((trx) => grantCredits(trx, { organizationId: org, source: 'purchase', amount: 100, description: 'Test credits' }));
  });
  after(async () => {
    await server?.stop();
    await db?.destroy();
    await upstream?.close();
  });

  it('is validated at boot: a JSON object of known providers and positive integers', () => {
    expect(testConfig({ PROVIDER_LIMITS: '{"social":{"concurrency":3,"per_minute":60}}' }).PROVIDER_LIMITS).to.deep.equal({
      social: { concurrency: 3, per_minute: 60 },
    });
    expect(testConfig().PROVIDER_LIMITS).to.equal(undefined);
    expect(() => testConfig({ PROVIDER_LIMITS: '{"social":{"concurrency":0}}' })).to.throw(/PROVIDER_LIMITS/);
    expect(() => testConfig({ PROVIDER_LIMITS: '{"fax":{"concurrency":1}}' })).to.throw(/PROVIDER_LIMITS/);
    expect(() => testConfig({ PROVIDER_LIMITS: 'not json' })).to.throw(/PROVIDER_LIMITS/);
  });

  it('a limit of 3 holds exactly 3 calls in flight across two workers; the rest wait queued (snoozed), none fails, each is billed once', async () => {
    const env = {
      SOCIAL_API_URL: upstream.url,
      READ_TIMEOUT_MS: '60000',
      WORKER_POLL_INTERVAL_SECONDS: '0.5',
      PROVIDER_LIMITS: '{"social":{"concurrency":3}}',
      LOG_LEVEL: 'info',
    };
    const workers = [worker(env), worker(env)];
    for (const child of workers) await child.waitForOutput(/worker started/);
    const answers = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        server.request('post', '/social/net2_profile', { token: alice.token, body: { organization_id: org, input: { username: `user${i}` } } }),
      ),
    );
    expect(answers.map((res) => res.status)).to.deep.equal(Array(8).fill(200));
    expect(answers.map((res) => res.body.credits_charged)).to.deep.equal(Array(8).fill(1));
    expect(load.peak, 'most calls in flight at once').to.equal(3);
    expect(load.total).to.equal(8);
    // The calls over the limit waited as snoozes (deferred attempts), not failures or retries.
    const { rows } = await db.raw(
      `SELECT count(*) FILTER (WHERE outcome = 'deferred')::int AS deferred, count(*) FILTER (WHERE outcome = 'failed')::int AS failed
         FROM job_attempts WHERE queue = ?`,
      [meteredCallJob.name],
    );
    expect(rows[0].failed).to.equal(0);
    expect(rows[0].deferred).to.be.greaterThan(0);
    expect(await reconcileCredits(db, org)).to.deep.equal([]);
    for (const child of workers) child.child.kill('SIGTERM');
    for (const child of workers) expect((await child.exited).code).to.equal(0);
  });
});
