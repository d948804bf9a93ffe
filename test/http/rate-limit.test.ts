import { expect } from 'chai';
import Koa from 'koa';
import { randomInt } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { authenticate } from '../../src/auth/authenticate.ts';
import { createDb, type Db } from '../../src/db/knex.ts';
import { createBoss } from '../../src/jobs/boss.ts';
import { errorMapper } from '../../src/http/errors.ts';
import { clientAddress } from '../../src/http/middleware/client-address.ts';
import { rateLimit, rateLimitByAddress } from '../../src/http/middleware/rate-limit.ts';
import { createLogger } from '../../src/platform/logger.ts';
import { sweepRateLimitWindowsJob } from '../../src/platform/maintenance/jobs.ts';
import { startWorker, type WorkerProcess } from '../../workers/main.ts';
import { TEST_JWT_SECRET, testConfig } from '../support/config.ts';
import { eventually } from '../support/eventually.ts';
import { testDatabase } from '../support/hooks.ts';
import { newUser, request, startTestServer, type ApiResponse, type TestServer } from '../support/server.ts';

/** A clock the test moves: 15 s into a whole minute, so a window has 45 s left. */
function testClock() {
  const clock = { time: Date.UTC(2031, 0, 1, 12, 0, 15), now: () => clock.time };
  return clock;
}

interface Stack {
  url: string;
  close(): Promise<void>;
}

/**
 * The real limiting middleware in the order the app uses (errors → per address → authentication →
 * per caller) behind one trusted proxy hop, on a pool and quota leases of its own: two stacks are two web processes sharing
 * nothing but Postgres, with a clock the test controls.
 */
async function limitedStack(clock: { now: () => number }, limits: { perCaller: number; perAddress: number }): Promise<Stack> {
  const config = testConfig();
  const db = createDb(testDatabase().url, { max: 4 });
  const app = new Koa();
  // As behind one proxy (TRUST_PROXY=1): the test's X-Forwarded-For is what that proxy appended.
  app.use(clientAddress({ kind: 'hops', hops: 1 }));
  app.use(errorMapper(createLogger(config, 'test-rate-limit')));
  app.use(rateLimitByAddress(db, limits.perAddress, { now: clock.now }));
  app.use(authenticate(config, TEST_JWT_SECRET, db));
  app.use(rateLimit(db, limits.perCaller, { now: clock.now }));
  app.use((ctx) => {
    ctx.body = { ok: true };
  });
  const server = app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await db.destroy();
    },
  };
}

const probe = (base: string, token: string | null, from?: string) =>
  request(base, 'get', '/organizations/available-slug', { token, query: { slug: 'rl' }, headers: from ? { 'x-forwarded-for': from } : {} });

function expectRefused(res: ApiResponse, limit: number, what: string, retryAfter: number, policy = 'default'): void {
  expect(res.status).to.equal(429);
  expect(res.body).to.deep.equal({
    code: 'rate_limited',
    message: `rate limit of ${limit} ${what} per minute used up; retry in ${retryAfter} s`,
    data: { issues: [] },
  });
  expect(res.headers.get('retry-after')).to.equal(String(retryAfter));
  expect(res.headers.get('ratelimit-limit')).to.equal(String(limit));
  expect(res.headers.get('ratelimit-remaining')).to.equal('0');
  expect(res.headers.get('ratelimit-reset')).to.equal(String(retryAfter));
  expect(res.headers.get('ratelimit-policy')).to.equal(`"${policy}";q=${limit};w=60`);
  expect(res.headers.get('ratelimit')).to.equal(`"${policy}";r=0;t=${retryAfter}`);
}

const hitsOf = async (db: Db, key: string) => (await db('rate_limit_windows').where({ caller: key }).orderBy('window_start')).map((row) => row.hits);

describe('rate limiting', () => {
  let db: Db;
  before(() => {
    db = createDb(testDatabase().url, { max: 2 });
  });
  after(async () => db.destroy());

  describe('per caller', () => {
    const clock = testClock();
    let web: Stack;
    let other: Stack;
    let large: Stack;
    before(async () => {
      [web, other, large] = await Promise.all([
        limitedStack(clock, { perCaller: 3, perAddress: 1000 }),
        limitedStack(clock, { perCaller: 3, perAddress: 1000 }),
        limitedStack(clock, { perCaller: 1000, perAddress: 1000 }),
      ]);
    });
    after(async () => Promise.all([web, other, large].map((stack) => stack.close())));

    it('counts down RateLimit-Remaining, then answers 429 with Retry-After and the Error body until the window ends', async () => {
      const alice = newUser();
      for (const remaining of [2, 1, 0]) {
        const res = await probe(web.url, alice.token);
        expect(res.status).to.equal(200);
        expect(res.headers.get('ratelimit-limit')).to.equal('3');
        expect(res.headers.get('ratelimit-remaining')).to.equal(String(remaining));
        expect(res.headers.get('ratelimit-reset')).to.equal('45');
        expect(res.headers.get('ratelimit-policy')).to.equal('"default";q=3;w=60');
        expect(res.headers.get('ratelimit')).to.equal(`"default";r=${remaining};t=45`);
      }
      expectRefused(await probe(web.url, alice.token), 3, 'requests', 45);
      clock.time += 30_000;
      expectRefused(await probe(web.url, alice.token), 3, 'requests', 15);

      // The quota is per caller: someone else is still served.
      expect((await probe(web.url, newUser().token)).status).to.equal(200);
      // The window row counts leased tokens (a lease of 1 at a time near a limit of 3, then one refused lease);
      // refusals once the window is known to be spent write nothing.
      expect(await hitsOf(db, `user:${alice.id}`)).to.deep.equal([4]);

      clock.time += 15_000;
      const next = await probe(web.url, alice.token);
      expect(next.status).to.equal(200);
      expect(next.headers.get('ratelimit-remaining')).to.equal('2');
      expect(next.headers.get('ratelimit-reset')).to.equal('60');
      expect(next.headers.get('ratelimit')).to.equal('"default";r=2;t=60');
      expect(await hitsOf(db, `user:${alice.id}`)).to.deep.equal([4, 1]);
    });

    it('leases 50 tokens in one write and spends them locally, with an exact RateLimit-Remaining', async () => {
      const erin = newUser();
      const remaining: string[] = [];
      for (let i = 0; i < 10; i++) {
        const res = await probe(large.url, erin.token);
        expect(res.status).to.equal(200);
        remaining.push(res.headers.get('ratelimit-remaining')!);
      }
      expect(remaining).to.deep.equal(['999', '998', '997', '996', '995', '994', '993', '992', '991', '990']);
      // One lease of min(50, 1000 / 8) tokens served all ten requests.
      expect(await hitsOf(db, `user:${erin.id}`)).to.deep.equal([50]);
    });

    it('is one limit across web processes: 3 requests alternating between two pass, the next on either is 429', async () => {
      const carol = newUser();
      const statuses: number[] = [];
      for (let i = 0; i < 3; i++) statuses.push((await probe([web, other][i % 2]!.url, carol.token)).status);
      expect(statuses).to.deep.equal([200, 200, 200]);
      expect((await probe(web.url, carol.token)).status).to.equal(429);
      expect((await probe(other.url, carol.token)).status).to.equal(429);
    });

    // Exactly 50: a process leases only with an empty pool and the window row never grants past the
    // limit; once one lease is refused no later lease gets anything, and each process (100 requests)
    // keeps receiving requests until it is refused, so every leased token is spent.
    it('admits exactly the limit of 50 out of 200 concurrent requests across two processes', async () => {
      const [one, two] = await Promise.all([
        limitedStack(clock, { perCaller: 50, perAddress: 1000 }),
        limitedStack(clock, { perCaller: 50, perAddress: 1000 }),
      ]);
      try {
        const dave = newUser();
        const answers = await Promise.all(Array.from({ length: 200 }, (_, i) => probe([one, two][i % 2]!.url, dave.token)));
        const statuses = answers.map((res) => res.status);
        expect(statuses.filter((status) => status === 200)).to.have.length(50);
        expect(statuses.filter((status) => status === 429)).to.have.length(150);
        for (const res of answers.filter((answer) => answer.status === 429)) expect(res.body.code).to.equal('rate_limited');
        const [hits] = await hitsOf(db, `user:${dave.id}`);
        // Tokens asked for: the 50 granted, plus what leases asked beyond what was left.
        expect(hits).to.be.at.least(50);
        // Afterwards both processes still refuse, from what they know, without another write.
        expect((await probe(one.url, dave.token)).status).to.equal(429);
        expect((await probe(two.url, dave.token)).status).to.equal(429);
        expect(await hitsOf(db, `user:${dave.id}`)).to.deep.equal([hits]);
      } finally {
        await Promise.all([one.close(), two.close()]);
      }
    });
  });

  describe('per client address, for requests without a valid token', () => {
    const clock = testClock();
    let web: Stack;
    let other: Stack;
    before(async () => {
      [web, other] = await Promise.all([limitedStack(clock, { perCaller: 1000, perAddress: 3 }), limitedStack(clock, { perCaller: 1000, perAddress: 3 })]);
    });
    after(async () => Promise.all([web, other].map((stack) => stack.close())));

    const what = 'requests without a valid token from one address';

    it('answers 401 up to the limit, shared by the processes, then 429 with Retry-After and the Error body', async () => {
      const from = '203.0.113.7';
      const statuses = [];
      for (const [i, token] of [null, 'not-a-jwt', newUser().token.slice(0, -2)].entries())
        statuses.push((await probe([web, other][i % 2]!.url, token, from)).status);
      expect(statuses).to.deep.equal([401, 401, 401]);
      expectRefused(await probe(web.url, null, from), 3, what, 45, 'address');
      expectRefused(await probe(other.url, 'garbage', from), 3, what, 45, 'address');
      // Spoofed entries to the left of the nearest proxy's do not change the address counted.
      expectRefused(await probe(web.url, null, `198.51.100.1, ${from}`), 3, what, 45, 'address');
      // 3 leases of one token, then one empty lease per process; the third refusal wrote nothing.
      expect(await hitsOf(db, `addr:${from}`)).to.deep.equal([5]);

      // Valid tokens from that address are served (they count per caller), and other addresses are not limited.
      expect((await probe(web.url, newUser().token, from)).status).to.equal(200);
      expect((await probe(web.url, null, '203.0.113.8')).status).to.equal(401);

      clock.time += 45_000;
      expect((await probe(web.url, null, from)).status).to.equal(401);
    });

    it('counts an IPv6 client per /64', async () => {
      for (const from of ['2001:db8:1:2::1', '2001:db8:1:2::2', '2001:db8:1:2:ffff::3']) expect((await probe(web.url, null, from)).status).to.equal(401);
      expect((await probe(web.url, null, '2001:db8:1:2::4')).status).to.equal(429);
      expect((await probe(web.url, null, '2001:db8:1:3::1')).status).to.equal(401);
      expect(await hitsOf(db, 'addr:2001:db8:1:2::/64')).to.have.length(1);
    });
  });

  describe('in the web process', () => {
    let server: TestServer;
    before(async () => {
      server = await startTestServer({ RATE_LIMIT_PER_MINUTE: '3', RATE_LIMIT_PER_ADDRESS_PER_MINUTE: '3' });
    });
    after(async () => server.stop());

    // Real clock here: a window may end between two requests, so each limit is reached within two windows' worth.
    it('limits callers and tokenless requests, and leaves the open plumbing alone', async () => {
      const alice = newUser();
      let limited: ApiResponse | undefined;
      for (let i = 0; i < 7 && !limited; i++) {
        const res = await probe(server.url, alice.token);
        if (res.status === 429) limited = res;
        else expect(res.status).to.equal(200);
      }
      expect(limited, 'a 429 within two windows of requests').to.not.equal(undefined);
      expectRefused(limited!, 3, 'requests', Number(limited!.headers.get('retry-after')));

      limited = undefined;
      for (let i = 0; i < 7 && !limited; i++) {
        const res = await probe(server.url, null);
        if (res.status === 429) limited = res;
        else expect(res.status).to.equal(401);
      }
      expect(limited, 'a 429 within two windows of requests').to.not.equal(undefined);
      expectRefused(limited!, 3, 'requests without a valid token from one address', Number(limited!.headers.get('retry-after')), 'address');

      for (const path of ['/healthz', '/openapi.json']) {
        const res = await server.request('get', path);
        expect(res.status).to.equal(200);
        expect(res.headers.get('ratelimit-limit')).to.equal(null);
        expect(res.headers.get('ratelimit')).to.equal(null);
      }
    });
  });

  describe('in the web process: X-Forwarded-For is believed only as TRUST_PROXY says', () => {
    let untrusting: TestServer;
    let behindOneProxy: TestServer;
    before(async () => {
      [untrusting, behindOneProxy] = await Promise.all([
        startTestServer({ RATE_LIMIT_PER_ADDRESS_PER_MINUTE: '3' }),
        startTestServer({ RATE_LIMIT_PER_ADDRESS_PER_MINUTE: '3', TRUST_PROXY: '1' }),
      ]);
    });
    after(async () => Promise.all([untrusting.stop(), behindOneProxy.stop()]));

    /** A loopback address of its own (all of 127/8 reaches the server), so no other test's requests share its window. */
    const peer = `127.${randomInt(1, 255)}.${randomInt(0, 256)}.${randomInt(1, 255)}`;
    /** A tokenless probe from `peer`, with the given X-Forwarded-For; its status. */
    const probeFrom = (server: TestServer, forwardedFor: string) =>
      new Promise<number>((resolve, reject) => {
        const req = httpRequest(
          new URL('/organizations/available-slug?slug=rl', server.url),
          { localAddress: peer, headers: { 'x-forwarded-for': forwardedFor } },
          (res) => {
            res.resume();
            res.on('end', () => resolve(res.statusCode!));
          },
        );
        req.on('error', reject);
        req.end();
      });

    /** Tokenless probes with a new X-Forwarded-For each time until one is refused; how many were answered 401 first. */
    async function answeredBeforeRefusal(server: TestServer, forwardedFor: (i: number) => string, attempts = 10): Promise<number> {
      for (let i = 0; i < attempts; i++) {
        const status = await probeFrom(server, forwardedFor(i));
        if (status === 429) return i;
        expect(status).to.equal(401);
      }
      return attempts;
    }

    // Real clock: a window may end between two requests, so a limit of 3 is reached within 6 requests.
    it('without TRUST_PROXY (the default), a client rotating X-Forwarded-For is counted by its socket address', async () => {
      const answered = await answeredBeforeRefusal(untrusting, (i) => `198.51.100.${i + 1}`);
      expect(answered).to.be.within(3, 6);
      expect((await hitsOf(db, `addr:${peer}`)).length).to.be.at.least(1);
      expect(await hitsOf(db, 'addr:198.51.100.1')).to.deep.equal([]);
    });

    it('with TRUST_PROXY=1, the entry the proxy appended counts: rotating the entries to its left changes nothing', async () => {
      const answered = await answeredBeforeRefusal(behindOneProxy, (i) => `192.0.2.${i + 1}, 203.0.113.50`);
      expect(answered).to.be.within(3, 6);
      expect((await hitsOf(db, 'addr:203.0.113.50')).length).to.be.at.least(1);
      // Two different clients as the proxy reports them are two addresses.
      expect(await probeFrom(behindOneProxy, '203.0.113.51')).to.equal(401);
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
      const state = await eventually('the sweep job is settled', async () => {
        const { rows } = await db.raw(`SELECT state FROM pgboss.job WHERE id = ?`, [id]);
        return ['completed', 'failed'].includes(rows[0]?.state) && (rows[0].state as string);
      });
      expect(state).to.equal('completed');
      expect(await hitsOf(db, caller)).to.deep.equal([1]);
    });
  });
});
