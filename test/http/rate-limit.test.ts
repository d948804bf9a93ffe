import { expect } from 'chai';
import { createDb, type Db } from '../../src/db/knex.ts';
import { createBoss } from '../../src/jobs/boss.ts';
import { createLogger } from '../../src/platform/logger.ts';
import { sweepRateLimitWindowsJob } from '../../src/platform/maintenance/jobs.ts';
import { startWorker, type WorkerProcess } from '../../workers/main.ts';
import { testConfig } from '../support/config.ts';
import { testDatabase } from '../support/hooks.ts';
import { spawnWeb, type WebChild } from '../support/processes.ts';
import { useServer } from '../support/suite.ts';
import { newUser, request, startTestServer, type TestServer } from '../support/server.ts';

/**
 * Windows are whole UTC minutes of the database clock. A test that must stay inside one window
 * starts early enough in it (this only ever waits; it never asserts on time).
 */
async function atLeastSecondsLeftInWindow(db: Db, seconds: number): Promise<void> {
  const { rows } = await db.raw<{ rows: { left: number }[] }>(`SELECT 60 - extract(epoch FROM now())::numeric % 60 AS left`);
  const left = Number(rows[0]!.left);
  if (left < seconds) await new Promise((resolve) => setTimeout(resolve, left * 1000 + 100));
}

const probe = (base: string, token: string) => request(base, 'get', '/organizations/available-slug', { token, query: { slug: 'rl' } });

describe('rate limiting', () => {
  let db: Db;
  before(() => {
    db = createDb(testDatabase().url, { max: 2 });
  });
  after(async () => db.destroy());

  describe('one web process', () => {
    let server: TestServer;
    before(async () => {
      server = await startTestServer({ RATE_LIMIT_PER_MINUTE: '3' });
    });
    after(async () => server.stop());

    it('counts down RateLimit-Remaining, then answers 429 with Retry-After and the Error body', async () => {
      const alice = newUser();
      await atLeastSecondsLeftInWindow(db, 15);
      for (const remaining of [2, 1, 0]) {
        const res = await probe(server.url, alice.token);
        expect(res.status).to.equal(200);
        expect(res.headers.get('ratelimit-limit')).to.equal('3');
        expect(res.headers.get('ratelimit-remaining')).to.equal(String(remaining));
        const reset = Number(res.headers.get('ratelimit-reset'));
        expect(reset).to.be.within(1, 60);
      }
      const limited = await probe(server.url, alice.token);
      expect(limited.status).to.equal(429);
      expect(limited.body).to.deep.equal({
        code: 'rate_limited',
        message: `rate limit of 3 requests per minute used up; retry in ${limited.headers.get('retry-after')} s`,
        data: { issues: [] },
      });
      const retryAfter = Number(limited.headers.get('retry-after'));
      expect(retryAfter).to.be.within(1, 60);
      expect(limited.headers.get('ratelimit-limit')).to.equal('3');
      expect(limited.headers.get('ratelimit-remaining')).to.equal('0');
      expect(limited.headers.get('ratelimit-reset')).to.equal(String(retryAfter));

      // The quota is per caller: someone else is still served.
      expect((await probe(server.url, newUser().token)).status).to.equal(200);
      // The window row holds the count (4 attempts, the refused one included).
      const rows = await db('rate_limit_windows').where({ caller: alice.id });
      expect(rows.map((row) => row.hits)).to.deep.equal([4]);
    });

    it('does not count the open plumbing (health, OpenAPI)', async () => {
      const bob = newUser();
      for (let i = 0; i < 5; i++) expect((await server.request('get', '/healthz')).status).to.equal(200);
      expect((await probe(server.url, bob.token)).headers.get('ratelimit-remaining')).to.equal('2');
    });
  });

  describe('one web process with a large quota', () => {
    const suite = useServer({ RATE_LIMIT_PER_MINUTE: '1000' });

    it('leases 50 tokens in one write and spends them locally, with an exact RateLimit-Remaining', async () => {
      const erin = newUser();
      await atLeastSecondsLeftInWindow(suite.db, 15);
      const remaining: string[] = [];
      for (let i = 0; i < 10; i++) {
        const res = await probe(suite.server.url, erin.token);
        expect(res.status).to.equal(200);
        remaining.push(res.headers.get('ratelimit-remaining')!);
      }
      expect(remaining).to.deep.equal(['999', '998', '997', '996', '995', '994', '993', '992', '991', '990']);
      // One lease of min(50, 1000 / 8) tokens served all ten requests.
      const rows = await suite.db('rate_limit_windows').where({ caller: erin.id });
      expect(rows.map((row) => row.hits)).to.deep.equal([50]);
    });
  });

  describe('two web processes', () => {
    let webs: WebChild[] = [];
    before(async function () {
      this.timeout(60_000);
      webs = await Promise.all([spawnWeb({ RATE_LIMIT_PER_MINUTE: '10', LOG_LEVEL: 'info' }), spawnWeb({ RATE_LIMIT_PER_MINUTE: '10', LOG_LEVEL: 'info' })]);
    });
    after(async function () {
      this.timeout(30_000);
      const exits = await Promise.all(webs.map((web) => web.stop()));
      for (const exit of exits) expect(exit.code, exit.stderr + exit.stdout.slice(-1500)).to.equal(0);
    });

    it('share one limit: 10 requests alternating between them pass, the 11th on either is 429', async () => {
      const carol = newUser();
      await atLeastSecondsLeftInWindow(db, 20);
      const statuses: number[] = [];
      for (let i = 0; i < 10; i++) statuses.push((await probe(webs[i % 2]!.url, carol.token)).status);
      expect(statuses).to.deep.equal(Array(10).fill(200));
      const first = await probe(webs[0]!.url, carol.token);
      const second = await probe(webs[1]!.url, carol.token);
      expect([first.status, second.status]).to.deep.equal([429, 429]);
      expect(first.body.code).to.equal('rate_limited');
      expect(second.headers.get('retry-after')).to.match(/^\d+$/);
    });
  });

  describe('two web processes under concurrent load', () => {
    let webs: WebChild[] = [];
    before(async function () {
      this.timeout(60_000);
      webs = await Promise.all([spawnWeb({ RATE_LIMIT_PER_MINUTE: '50', LOG_LEVEL: 'info' }), spawnWeb({ RATE_LIMIT_PER_MINUTE: '50', LOG_LEVEL: 'info' })]);
    });
    after(async function () {
      this.timeout(30_000);
      const exits = await Promise.all(webs.map((web) => web.stop()));
      for (const exit of exits) expect(exit.code, exit.stderr + exit.stdout.slice(-1500)).to.equal(0);
    });

    // Exactly 50: a process leases only with an empty pool and the window row never grants past the
    // limit; once one lease is refused no later lease gets anything, and each process (100 requests)
    // keeps receiving requests until it is refused, so every leased token is spent.
    it('admit exactly the limit of 50 out of 200 concurrent requests, leased in batches', async () => {
      const dave = newUser();
      await atLeastSecondsLeftInWindow(db, 20);
      const answers = await Promise.all(Array.from({ length: 200 }, (_, i) => probe(webs[i % 2]!.url, dave.token)));
      const statuses = answers.map((res) => res.status);
      expect(statuses.filter((status) => status === 200)).to.have.length(50);
      expect(statuses.filter((status) => status === 429)).to.have.length(150);
      for (const res of answers.filter((answer) => answer.status === 429)) {
        expect(res.body.code).to.equal('rate_limited');
        expect(res.headers.get('ratelimit-remaining')).to.equal('0');
      }
      // The row counts every token asked for: at least the 50 granted plus one per refused attempt.
      const [row] = await db('rate_limit_windows').where({ caller: dave.id });
      expect(row.hits).to.be.at.least(200);
      // Afterwards both processes still refuse: the quota is used up, not merely this burst's share.
      expect((await probe(webs[0]!.url, dave.token)).status).to.equal(429);
      expect((await probe(webs[1]!.url, dave.token)).status).to.equal(429);
    });
  });

  describe('maintenance sweep', () => {
    let worker: WorkerProcess;
    before(async () => {
      const config = testConfig();
      worker = await startWorker(config, testDatabase().url, createLogger(config, 'test-worker'));
    });
    after(async function () {
      this.timeout(40_000);
      await worker.stop();
    });

    it('is scheduled every minute by the worker', async () => {
      const { rows } = await db.raw(`SELECT name, cron, timezone FROM pgboss.schedule WHERE name = ?`, [sweepRateLimitWindowsJob.name]);
      expect(rows).to.deep.equal([{ name: sweepRateLimitWindowsJob.name, cron: '* * * * *', timezone: 'UTC' }]);
    });

    it('deletes windows older than two minutes through the job and keeps current ones', async () => {
      const caller = `sweep_${Date.now()}`;
      await db.raw(
        `INSERT INTO rate_limit_windows (caller, window_start, hits) VALUES
           (?, date_trunc('minute', now()) - interval '10 minutes', 5),
           (?, date_trunc('minute', now()) - interval '3 minutes', 5),
           (?, date_trunc('minute', now()), 1)`,
        [caller, caller, caller],
      );
      const boss = createBoss(testDatabase().url, 'web');
      await boss.start();
      const id = await boss.send(sweepRateLimitWindowsJob.name, {});
      await boss.stop({ graceful: false, close: true });
      // Wait for the worker to settle it (the test's own timeout bounds the wait).
      let state: string;
      for (;;) {
        state = (await db.raw(`SELECT state FROM pgboss.job WHERE id = ?`, [id])).rows[0]?.state;
        if (state === 'completed' || state === 'failed') break;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      expect(state).to.equal('completed');
      const kept = await db('rate_limit_windows').where({ caller });
      expect(kept.map((row) => row.hits)).to.deep.equal([1]);
    });
  });
});
