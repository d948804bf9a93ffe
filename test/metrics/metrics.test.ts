import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { createBoss } from '../../src/jobs/boss.ts';
import { LedgerTally, startWorkerMetrics } from '../../src/metrics/index.ts';
import { createDb, type Db } from '../../src/db/knex.ts';
import { createLogger } from '../../src/platform/logger.ts';
import { testConfig } from '../support/config.ts';
import { eventually } from '../support/eventually.ts';
import { createAsset, createOrganization, newUser } from '../support/factories.ts';
import { testDatabase } from '../support/hooks.ts';
import { request, startTestServer, type TestServer } from '../support/server.ts';

const TOKEN = 'metrics-token-0123456789abcdef';

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** The Prometheus text format, one sample per line (label values here contain no `"` or `,`). */
function parseMetrics(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    const match = /^(\w+)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match) continue;
    const labels: Record<string, string> = {};
    for (const pair of (match[2] ?? '').matchAll(/(\w+)="([^"]*)"/g)) labels[pair[1]!] = pair[2]!;
    samples.push({ name: match[1]!, labels, value: Number(match[3]) });
  }
  return samples;
}

/** The value of the one sample with exactly `labels`, or undefined. */
function sampleValue(samples: Sample[], name: string, labels: Record<string, string>): number | undefined {
  const found = samples.filter((s) => s.name === name && JSON.stringify(Object.entries(s.labels).sort()) === JSON.stringify(Object.entries(labels).sort()));
  expect(found.length, `${name} ${JSON.stringify(labels)} appears at most once`).to.be.at.most(1);
  return found[0]?.value;
}

async function scrape(base: string, token: string | undefined = TOKEN): Promise<Sample[]> {
  const res = await fetch(new URL('/metrics', base), { headers: token ? { authorization: `Bearer ${token}` } : {} });
  expect(res.status).to.equal(200);
  expect(res.headers.get('content-type')).to.match(/^text\/plain; version=0\.0\.4/);
  return parseMetrics(await res.text());
}

/** A queue no worker works, with `count` jobs waiting; pg-boss's cached counts refreshed (what a worker's monitor pass does). */
async function queueWithJobs(url: string, count: number): Promise<string> {
  const name = `metrics-test-${randomUUID().slice(0, 8)}`;
  const boss = createBoss(url, 'release');
  await boss.start();
  try {
    await boss.createQueue(name);
    for (let i = 0; i < count; i++) await boss.send(name, { i });
    // A job deferred to later is counted as deferred, not ready, and is not the oldest waiting job.
    await boss.send(name, { later: true }, { startAfter: 3600 });
    await boss.getQueueStats(name, { force: true });
  } finally {
    await boss.stop({ graceful: false, close: true });
  }
  return name;
}

describe('metrics', () => {
  describe('GET /metrics on the API port (METRICS_TOKEN)', () => {
    let server: TestServer;
    let db: Db;
    const owner = newUser();
    let org: string;
    let assetId: string;
    let queue: string;

    before(async () => {
      server = await startTestServer({ METRICS_TOKEN: TOKEN });
      db = createDb(testDatabase().url, { max: 2 });
      // Arranged before the first scrape: the database readings are cached for 5 s.
      org = await createOrganization(server, owner); // the starter grant: a `grant` ledger row
      const adjusted = await server.request('post', `/organizations/${org}/credits/adjustments`, {
        token: owner.token,
        body: { amount: 250, reason: 'metrics' },
      });
      expect(adjusted.status, JSON.stringify(adjusted.body)).to.equal(201);
      assetId = (await createAsset(server, owner, org)).id;
      queue = await queueWithJobs(testDatabase().url, 3);
    });
    after(async () => {
      await server.stop();
      await db.destroy();
    });

    it('is 401 without the token or with a wrong one, in the Error body', async () => {
      const attempts: Record<string, string>[] = [
        {},
        { authorization: 'Bearer wrong-token-0123456789abcdef' },
        { authorization: TOKEN },
        { authorization: `Bearer ${owner.token}` },
      ];
      for (const headers of attempts) {
        const res = await request(server.url, 'get', '/metrics', { headers });
        expect(res.status, JSON.stringify(headers)).to.equal(401);
        expect(res.body).to.deep.include({ code: 'unauthorized', message: 'a valid metrics token is required (Authorization: Bearer <METRICS_TOKEN>)' });
        expect(res.body.data).to.deep.equal({ issues: [] });
        expect(res.headers.get('www-authenticate')).to.match(/^Bearer/);
      }
    });

    it('counts requests by route template and final status, never by raw URL', async () => {
      expect((await server.request('get', `/assets/${assetId}`, { token: owner.token })).status).to.equal(200);
      expect((await server.request('get', `/assets/${randomUUID()}`, { token: owner.token })).status).to.equal(404);
      expect((await server.request('get', `/assets/${randomUUID()}`, { token: owner.token })).status).to.equal(404);
      // Refused by authentication before routing: still named by the route it aimed at.
      expect((await server.request('get', `/assets/${assetId}`)).status).to.equal(401);
      expect((await server.request('get', `/no-such-path/${randomUUID()}`, { token: owner.token })).status).to.equal(404);

      const samples = await scrape(server.url);
      const route = '/assets/{asset_id}';
      expect(sampleValue(samples, 'http_requests_total', { method: 'GET', route, status: '200', process: 'web' })).to.equal(1);
      expect(sampleValue(samples, 'http_requests_total', { method: 'GET', route, status: '404', process: 'web' })).to.equal(2);
      expect(sampleValue(samples, 'http_requests_total', { method: 'GET', route, status: '401', process: 'web' })).to.equal(1);
      expect(sampleValue(samples, 'http_requests_total', { method: 'GET', route: 'unmatched', status: '404', process: 'web' })).to.be.at.least(1);
      expect(sampleValue(samples, 'http_request_duration_seconds_count', { method: 'GET', route, status: '404', process: 'web' })).to.equal(2);
      expect(sampleValue(samples, 'http_request_duration_seconds_bucket', { method: 'GET', route, status: '404', process: 'web', le: '+Inf' })).to.equal(2);
      // The 401 scrapes of the test before are counted under the /metrics route.
      expect(sampleValue(samples, 'http_requests_total', { method: 'GET', route: '/metrics', status: '401', process: 'web' })).to.equal(4);
      const routes = new Set(samples.filter((s) => s.name === 'http_requests_total').map((s) => s.labels.route));
      for (const r of routes) expect(r, 'no raw ids in route labels').not.to.match(/[0-9a-f]{8}-[0-9a-f]{4}/);
    });

    it('exposes the pool, the queues, the credit ledger and the process metrics', async () => {
      const samples = await scrape(server.url);
      expect(sampleValue(samples, 'db_pool_connections_max', { pool: 'web', process: 'web' })).to.equal(10);
      for (const name of ['db_pool_connections_used', 'db_pool_connections_free', 'db_pool_pending_acquires', 'db_pool_pending_creates']) {
        expect(sampleValue(samples, name, { pool: 'web', process: 'web' }), name).to.be.a('number');
      }
      expect(sampleValue(samples, 'job_queue_depth', { queue, state: 'ready', process: 'web' })).to.equal(3);
      expect(sampleValue(samples, 'job_queue_depth', { queue, state: 'deferred', process: 'web' })).to.equal(1);
      expect(sampleValue(samples, 'job_queue_depth', { queue, state: 'active', process: 'web' })).to.equal(0);
      const oldest = sampleValue(samples, 'job_queue_oldest_seconds', { queue, process: 'web' });
      expect(oldest).to.be.greaterThan(0).and.lessThan(120);
      expect(sampleValue(samples, 'job_queue_stats_age_seconds', { queue, process: 'web' })).to.be.at.least(0);

      // The ledger's totals by kind, as the database has them.
      const ledger = await db('credit_ledger_entries').select('kind').count('* as entries').sum('amount as amount').groupBy('kind');
      expect(ledger.map((row) => row.kind)).to.include.members(['grant', 'adjustment']);
      for (const row of ledger) {
        expect(sampleValue(samples, 'credits_moved_total', { kind: row.kind, process: 'web' }), row.kind).to.equal(Number(row.amount));
        expect(sampleValue(samples, 'credit_ledger_entries_total', { kind: row.kind, process: 'web' }), row.kind).to.equal(Number(row.entries));
      }
      expect(sampleValue(samples, 'process_cpu_seconds_total', { process: 'web' })).to.be.a('number');
      expect(sampleValue(samples, 'metrics_collector_errors_total', { collector: 'queues', process: 'web' })).to.equal(undefined);
    });

    it('is documented in /openapi.json under its own bearer scheme', async () => {
      const res = await server.request('get', '/openapi.json');
      const operation = res.body.paths['/metrics'].get;
      expect(operation.operationId).to.equal('getMetrics');
      expect(operation.security).to.deep.equal([{ metricsToken: [] }]);
      expect(Object.keys(operation.responses)).to.include.members(['200', '401', '404']);
      expect(res.body.components.securitySchemes.metricsToken).to.deep.include({ type: 'http', scheme: 'bearer' });
    });
  });

  describe('the credit ledger tally', () => {
    let db: Db;
    let server: TestServer;
    let org: string;
    before(async () => {
      server = await startTestServer();
      db = createDb(testDatabase().url, { max: 4 });
      org = await createOrganization(server, newUser());
    });
    after(async () => {
      await server.stop();
      await db.destroy();
    });

    const entry = (amount: number) => ({
      organization_id: org,
      kind: 'refund',
      amount,
      from_account: 'issued',
      to_account: 'available',
      description: 'metrics tally test',
    });
    const refunds = (tally: LedgerTally) => tally.totals.get('refund')?.amount ?? 0;

    it('adds what arrived since, including a row committed after a later one (seq drawn earlier)', async () => {
      const tally = new LedgerTally(db);
      await tally.refresh();
      const before = refunds(tally);

      const slow = await db.transaction();
      try {
        await slow('credit_ledger_entries').insert(entry(7)); // draws its seq now, commits last
        await db('credit_ledger_entries').insert(entry(11));
        await tally.refresh();
        expect(refunds(tally)).to.equal(before + 11);
        expect(tally.pendingSeqs).to.have.length.of.at.least(1);
        await slow.commit();
      } catch (error) {
        await slow.rollback();
        throw error;
      }
      await tally.refresh();
      expect(refunds(tally)).to.equal(before + 18);
      await tally.refresh();
      expect(refunds(tally), 'nothing counted twice').to.equal(before + 18);
    });

    it('forgets a seq whose transaction rolled back', async () => {
      const tally = new LedgerTally(db);
      await tally.refresh();
      const before = refunds(tally);
      const aborted = await db.transaction();
      await aborted('credit_ledger_entries').insert(entry(5));
      await db('credit_ledger_entries').insert(entry(3));
      await tally.refresh();
      const missing = tally.pendingSeqs.length;
      expect(missing).to.be.at.least(1);
      await aborted.rollback();
      // Forgotten once every transaction running when the gap was seen has ended (the cluster is shared with other test files).
      await eventually('the rolled-back seq is forgotten', async () => {
        await tally.refresh();
        return tally.pendingSeqs.length < missing;
      });
      expect(refunds(tally)).to.equal(before + 3);
    });
  });

  describe('GET /metrics on METRICS_PORT', () => {
    it('is served there without a token, and the API port answers 404', async () => {
      const server = await startTestServer({ METRICS_PORT: '0' });
      try {
        expect(server.web.metricsUrl).to.be.a('string');
        const samples = await scrape(server.web.metricsUrl!, undefined);
        expect(sampleValue(samples, 'db_pool_connections_max', { pool: 'web', process: 'web' })).to.equal(10);
        const onApi = await server.request('get', '/metrics');
        expect(onApi.status).to.equal(404);
        // Says where they are instead.
        expect(onApi.body).to.deep.include({
          code: 'not_found',
          message: 'metrics are not served on this port: the web process serves them on METRICS_PORT (a free port chosen at start)',
        });
        // The API's requests are counted all the same.
        await server.request('get', '/healthz');
        const after = await scrape(server.web.metricsUrl!, undefined);
        expect(sampleValue(after, 'http_requests_total', { method: 'GET', route: '/healthz', status: '200', process: 'web' })).to.equal(1);
        const other = await request(server.web.metricsUrl!, 'get', '/other');
        expect(other.status).to.equal(404);
      } finally {
        await server.stop();
      }
    });

    it('asks for METRICS_TOKEN there when it is set', async () => {
      const server = await startTestServer({ METRICS_PORT: '0', METRICS_TOKEN: TOKEN });
      try {
        const res = await request(server.web.metricsUrl!, 'get', '/metrics');
        expect(res.status).to.equal(401);
        expect(res.body).to.deep.equal({ code: 'unauthorized', message: res.body.message, data: { issues: [] } });
        await scrape(server.web.metricsUrl!, TOKEN);
        expect((await server.request('get', '/metrics', { headers: { authorization: `Bearer ${TOKEN}` } })).status).to.equal(404);
      } finally {
        await server.stop();
      }
    });

    it('is not exposed at all without METRICS_TOKEN or METRICS_PORT', async () => {
      const server = await startTestServer();
      try {
        expect(server.web.metricsUrl).to.equal(undefined);
        const res = await server.request('get', '/metrics', { headers: { authorization: `Bearer ${TOKEN}` } });
        expect(res.status).to.equal(404);
        // Names the setting that serves them.
        expect(res.body.message).to.equal(
          'metrics are not served: set METRICS_TOKEN to serve GET /metrics here to that bearer token (or METRICS_PORT for a port of their own)',
        );
      } finally {
        await server.stop();
      }
    });
  });

  describe('startWorkerMetrics', () => {
    it('serves the worker registry on WORKER_METRICS_PORT, with the job counters', async () => {
      const config = testConfig({ WORKER_METRICS_PORT: '0', METRICS_TOKEN: TOKEN });
      const db = createDb(testDatabase().url, { max: 2 });
      const metrics = await startWorkerMetrics(config, db, createLogger(config, 'test-worker'));
      try {
        expect(metrics.url).to.be.a('string');
        expect((await request(metrics.url!, 'get', '/metrics')).status).to.equal(401);
        expect((await request(metrics.url!, 'get', '/elsewhere')).status).to.equal(404);

        metrics.jobs.attemptStarted('emails.v1');
        metrics.jobs.attemptStarted('emails.v1');
        metrics.jobs.attemptStarted('emails.v1');
        metrics.jobs.attemptEnded('emails.v1', 'completed', 0.2);
        metrics.jobs.attemptEnded('emails.v1', 'failed', 1.5);
        metrics.jobs.attemptEnded('emails.v1', 'deferred', 0.01);

        const samples = await scrape(metrics.url!, TOKEN);
        const queue = { queue: 'emails.v1', process: 'worker' };
        expect(sampleValue(samples, 'jobs_started_total', queue)).to.equal(3);
        expect(sampleValue(samples, 'jobs_completed_total', queue)).to.equal(1);
        expect(sampleValue(samples, 'jobs_failed_total', queue)).to.equal(1);
        expect(sampleValue(samples, 'job_duration_seconds_count', { ...queue, outcome: 'completed' })).to.equal(1);
        expect(sampleValue(samples, 'job_duration_seconds_sum', { ...queue, outcome: 'failed' })).to.equal(1.5);
        expect(sampleValue(samples, 'job_duration_seconds_count', { ...queue, outcome: 'deferred' })).to.equal(1);
        expect(sampleValue(samples, 'db_pool_connections_max', { pool: 'worker', process: 'worker' })).to.equal(2);
        expect(samples.some((s) => s.name === 'job_queue_depth')).to.equal(true);
        expect(samples.some((s) => s.name === 'credits_moved_total')).to.equal(true);
      } finally {
        await metrics.stop();
        await db.destroy();
      }
    });

    it('listens nowhere without WORKER_METRICS_PORT, and still counts', async () => {
      const config = testConfig();
      const db = createDb(testDatabase().url, { max: 1 });
      const metrics = await startWorkerMetrics(config, db, createLogger(config, 'test-worker'));
      try {
        expect(metrics.url).to.equal(undefined);
        metrics.jobs.attemptStarted('q.v1');
        expect(await metrics.registry.getSingleMetricAsString('jobs_started_total')).to.include('jobs_started_total{queue="q.v1",process="worker"} 1');
      } finally {
        await metrics.stop();
        await db.destroy();
      }
    });
  });
});
