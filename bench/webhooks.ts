/**
 * Webhook delivery, end to end, against raw pg-boss in the same run, on a throw-away database (an
 * embedded PostgreSQL unless DATABASE_URL names a server). One worker (workers/main.ts startWorker,
 * only the delivery queue) and a loopback receiver in this process, so commit and arrival are read
 * on one clock.
 *
 *  (a) idle: BENCH_IDLE events, one at a time, each fanned out (fanOutEvent) to one endpoint in a
 *      transaction of its own; commit → the receiver has the request: p50/p95.
 *  (b) fan-out: BENCH_RATE events/s for BENCH_SECONDS, each to 10 endpoints; first all 10 healthy
 *      (the baseline), then with one of them answering after BENCH_SLOW_MS: the healthy endpoints'
 *      commit → arrival p50/p95 in both, and their ratio (1.0: the slow endpoint costs the others nothing).
 *  (c) throughput: BENCH_DRAIN deliveries over 10 healthy endpoints queued at once and drained,
 *      against raw pg-boss send + work of as many jobs whose handler POSTs the same body to the same
 *      receiver (same local and group concurrency, no signing, no SSRF guard, no delivery records);
 *      the rounds take turns (raw, ours, raw, ours …, BENCH_ROUNDS each); ratio of the medians.
 * Flags: --idle=100 --rate=50 --seconds=10 --slow-ms=5000 --drain=1000 --rounds=2
 * Run: npm run bench:webhooks
 */
import { randomUUID } from 'node:crypto';
import { runnableJob } from '../src/app/jobs.ts';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { createDb } from '../src/db/knex.ts';
import { createBoss, ensureQueues } from '../src/jobs/boss.ts';
import { defineJob, localConcurrencyOf } from '../src/jobs/define.ts';
import { JobQueue } from '../src/jobs/enqueue.ts';
import { createLogger } from '../src/platform/logger.ts';
import { fanOutEvent, type WebhookEvent } from '../src/webhooks/index.ts';
import { ENDPOINT_CONCURRENCY, webhookDeliveryJob } from '../src/webhooks/jobs.ts';
import { keyringFor, newSigningSecret, sealSigningSecret } from '../src/webhooks/signing.ts';
import { testConfig } from '../test/support/config.ts';
import { createTestDatabase } from '../test/support/database.ts';
import { startWorker } from '../workers/main.ts';
import { ascending, fmt, int, load, median, percentile, readFlags, text, waitFor } from './support/bench.ts';

readFlags();
const IDLE = int('IDLE', 100);
const RATE = int('RATE', 50);
const SECONDS = int('SECONDS', 10);
const SLOW_MS = int('SLOW_MS', 5000);
const DRAIN = int('DRAIN', 1000);
const ROUNDS = int('ROUNDS', 2);
const FAN_OUT = 10;
const PHASES = text('PHASES', 'abc');

// ——— the receiver: arrival time of each (path, webhook-id) ———
const arrivals = new Map<string, number>();
const slowPaths = new Set<string>();
const receiver = http.createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    const at = performance.now();
    const id = req.headers['webhook-id'];
    if (typeof id === 'string') arrivals.set(`${req.url}|${id}`, at);
    const answer = () => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end('ok');
    };
    if (slowPaths.has(req.url ?? '')) setTimeout(answer, SLOW_MS);
    else answer();
  });
});
await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
const port = (receiver.address() as AddressInfo).port;
const receiverUrl = `http://127.0.0.1:${port}`;

// ——— database, worker, sender ———
const database = await createTestDatabase();
const url = database.url;
const config = testConfig({ OUTBOUND_ALLOWLIST: `127.0.0.1:${port}`, LOG_LEVEL: 'silent', WORKER_POLL_INTERVAL_SECONDS: '1' });
const log = createLogger(config, 'bench');
const db = createDb(url, { max: 10 });
const sender = createBoss(url, 'web', { max: 4 });
await sender.start();
const rawJob = defineJob({
  name: 'bench.webhook-raw',
  version: 1,
  payload: webhookDeliveryJob.payload,
  policy: webhookDeliveryJob.policy,
});
await ensureQueues(sender, [rawJob]);
const jobs = new JobQueue(sender);

const owner = `bench_${randomUUID().slice(0, 8)}`;
await db('users').insert({ id: owner, email: `${owner}@example.test`, name: 'Bench' });
const [{ id: org }] = await db('organizations')
  .insert({ name: 'Bench Co', slug: `bench-${randomUUID().slice(0, 8)}`, created_by_id: owner })
  .returning('id');
await db('organization_members').insert({ organization_id: org, user_id: owner, role: 'owner' });
const keyring = await keyringFor(config);

/** Endpoints subscribed to `type`, straight in the table (the API's create is not what is measured). */
async function endpoints(type: string, paths: string[]): Promise<void> {
  for (const path of paths) {
    const id = randomUUID();
    const sealed = sealSigningSecret(keyring, id, newSigningSecret());
    await db('webhook_endpoints').insert({
      id,
      organization_id: org,
      url: `${receiverUrl}${path}`,
      event_types: [type],
      created_by_id: owner,
      secret_ciphertext: sealed.ciphertext,
      secret_iv: sealed.iv,
      secret_auth_tag: sealed.auth_tag,
      secret_key_id: sealed.key_id,
    });
  }
}
const event = (type: WebhookEvent['type']): WebhookEvent => ({
  id: `evt_${randomUUID()}`,
  type,
  organization_id: org,
  created_at: new Date().toISOString(),
  data: { object: { id: randomUUID(), title: 'A benchmark event', status: 'succeeded' } },
  subject: null,
});
/** Commits one event's fan-out; returns the commit instant. */
async function publish(events: WebhookEvent[]): Promise<number> {
  await db.transaction(async (trx) => {
    for (const e of events) await fanOutEvent(trx, e, { jobs });
  });
  return performance.now();
}
const arrived = (path: string, id: string) => arrivals.get(`${path}|${id}`);
const summary = (ms: number[]) => {
  const sorted = ascending(ms);
  return { p50: percentile(sorted, 50), p95: percentile(sorted, 95), n: sorted.length };
};
const show = (s: { p50: number; p95: number; n: number }) => `p50 ${fmt.ms(s.p50)}, p95 ${fmt.ms(s.p95)} (${s.n} deliveries)`;

// The delivery handler as bound, wrapped to mark when each attempt starts and when its first step
// (the checks under the lease and the slot claim) commits: the idle breakdown's marks.
const handlerStarted = new Map<string, number>();
const prepared = new Map<string, number>();
const bound = runnableJob(webhookDeliveryJob);
const marked: typeof bound = {
  ...bound,
  handler: async () => {
    const run = await bound.handler();
    return (payload, context) => {
      const id = (payload as { delivery_id: string }).delivery_id;
      handlerStarted.set(id, performance.now());
      let first = true;
      const step: typeof context.step = async (work) => {
        const value = await context.step(work);
        if (first) prepared.set(id, performance.now());
        first = false;
        return value;
      };
      return run(payload, { ...context, step });
    };
  },
};
const worker = await startWorker(config, url, log, { jobs: [marked] });
console.log(
  `bench:webhooks — load ${load()}, one worker (delivery queue: ${localConcurrencyOf(webhookDeliveryJob, config)} slots, ${ENDPOINT_CONCURRENCY} per endpoint)`,
);

const paths = (prefix: string) => Array.from({ length: FAN_OUT }, (_, i) => `/${prefix}${i}`);

/** Raw pg-boss working `rawJob`: its handler POSTs `body` to the job's path (the baseline of (a) and (c)). */
async function rawWorker(body: string) {
  const boss = createBoss(url, 'worker', { max: 4 });
  boss.on('error', (error) => console.error('raw pg-boss error', error));
  await boss.start();
  await boss.work(
    rawJob.name,
    {
      batchSize: 1,
      localConcurrency: localConcurrencyOf(webhookDeliveryJob, config),
      groupConcurrency: ENDPOINT_CONCURRENCY,
      // As bench/support/raw-worker.ts: pg-boss's own pacing plus the wake-up after each job our slot waker does.
      pollingIntervalSeconds: 0.5,
      notifyPollingIntervalSeconds: 0.5,
      burstWhenReadyExceeds: 1,
    },
    async ([job]) => {
      const { delivery_id, path } = job!.data as { delivery_id: string; path: string };
      try {
        const response = await fetch(`${receiverUrl}${path}`, {
          method: 'POST',
          body,
          headers: { 'content-type': 'application/json', 'webhook-id': delivery_id },
        });
        await response.text();
      } catch (error) {
        console.error('raw handler failed', error);
        throw error;
      }
    },
  );
  return boss;
}

if (PHASES.includes('a')) {
  // (a) idle: commit → delivered, one event at a time; in turn with raw pg-boss (send → its handler's POST arrives).
  await endpoints('asset.enriched', ['/idle']);
  const raw = await rawWorker(JSON.stringify(event('asset.enriched')));
  const idle: number[] = [];
  const baseline: number[] = [];
  const pickup: number[] = [];
  const checks: number[] = [];
  const sending: number[] = [];
  for (let i = 0; i < IDLE; i++) {
    const id = randomUUID();
    await sender.send(rawJob.name, { delivery_id: id, path: '/raw-idle' }, { group: { id: '/raw-idle' } });
    const sent = performance.now();
    baseline.push((await waitFor('a raw idle delivery', async () => arrived('/raw-idle', id), 30_000, 1)) - sent);

    const e = event('asset.enriched');
    const committed = await publish([e]);
    const at = await waitFor('an idle delivery', async () => arrived('/idle', e.id), 30_000, 1);
    idle.push(at - committed);
    const delivery = await db('webhook_deliveries').where({ event_id: e.id }).first('id');
    pickup.push(handlerStarted.get(delivery.id)! - committed);
    checks.push(prepared.get(delivery.id)! - handlerStarted.get(delivery.id)!);
    sending.push(at - prepared.get(delivery.id)!);
  }
  await raw.stop({ graceful: false, close: true });
  const ours = summary(idle);
  const base = summary(baseline);
  console.log(`(a) idle, commit → delivered: ${show(ours)}   [load ${load()}]`);
  console.log(
    `    raw pg-boss send → its handler's POST arrives, in turn: ${show(base)}; ours / raw p50 ${fmt.x(ours.p50 / base.p50)}, p95 ${fmt.x(ours.p95 / base.p95)}`,
  );
  console.log(
    `    ours, where the time goes (p50 / p95): commit → handler ${fmt.ms(summary(pickup).p50)} / ${fmt.ms(summary(pickup).p95)}; checks and slot claim (first step) ${fmt.ms(summary(checks).p50)} / ${fmt.ms(summary(checks).p95)}; signed POST → arrival ${fmt.ms(summary(sending).p50)} / ${fmt.ms(summary(sending).p95)}`,
  );
}

if (PHASES.includes('b')) {
  // (b) fan-out to 10 endpoints at RATE events/s, without and then with a slow endpoint.
  async function fanOut(type: WebhookEvent['type'], healthy: string[]): Promise<{ p50: number; p95: number; n: number }> {
    const sent: { id: string; at: number }[] = [];
    const started = performance.now();
    for (let i = 0; i < RATE * SECONDS; i++) {
      const due = started + (i * 1000) / RATE;
      const wait = due - performance.now();
      if (wait > 0) await sleep(wait);
      const e = event(type);
      sent.push({ id: e.id, at: await publish([e]) });
    }
    const latencies: number[] = [];
    for (const { id, at } of sent)
      for (const path of healthy) latencies.push((await waitFor('a healthy delivery', async () => arrived(path, id), 120_000, 5)) - at);
    return summary(latencies);
  }
  const baselinePaths = paths('base');
  await endpoints('member.added', baselinePaths);
  const baseline = await fanOut('member.added', baselinePaths.slice(1));
  console.log(`(b) fan-out ×${FAN_OUT} at ${RATE}/s for ${SECONDS} s, all healthy — the 9 compared: ${show(baseline)}   [load ${load()}]`);
  const slowCase = paths('slow');
  slowPaths.add(slowCase[0]!);
  await endpoints('member.removed', slowCase);
  const withSlow = await fanOut('member.removed', slowCase.slice(1));
  console.log(
    `    with ${slowCase[0]} answering after ${SLOW_MS} ms — the 9 healthy: ${show(withSlow)}; p95 ratio ${fmt.x(withSlow.p95 / baseline.p95)}, p50 ratio ${fmt.x(withSlow.p50 / baseline.p50)}   [load ${load()}]`,
  );
  await waitFor(
    'the slow endpoint drained',
    async () => ((await db('webhook_deliveries').where({ status: 'pending' }).first(db.raw('count(*)::int AS n'))).n === 0 ? true : undefined),
    600_000,
    500,
  );
}

if (PHASES.includes('c')) {
  // (c) throughput: drain DRAIN deliveries, ours vs raw pg-boss (its handler POSTs the same body).
  const drainPaths = paths('drain');
  await endpoints('asset.import.succeeded', drainPaths);
  const body = JSON.stringify(event('asset.import.succeeded'));
  async function rawRound(): Promise<number> {
    const boss = await rawWorker(body);
    const ids = Array.from({ length: DRAIN }, () => randomUUID());
    const started = performance.now();
    for (let i = 0; i < DRAIN; i += 100)
      await sender.insert(
        rawJob.name,
        ids
          .slice(i, i + 100)
          .map((id, j) => ({ data: { delivery_id: id, path: drainPaths[(i + j) % FAN_OUT] }, group: { id: drainPaths[(i + j) % FAN_OUT]! } })),
      );
    console.log(`    raw: ${DRAIN} jobs queued in ${fmt.ms(performance.now() - started)}`);
    await waitFor('raw drained', async () => (ids.every((id, n) => arrived(drainPaths[n % FAN_OUT]!, id)) ? true : undefined), 600_000, 50);
    const rate = DRAIN / ((performance.now() - started) / 1000);
    await boss.stop({ graceful: false, close: true });
    return rate;
  }
  async function oursRound(): Promise<number> {
    const events = Array.from({ length: DRAIN / FAN_OUT }, () => event('asset.import.succeeded'));
    const started = performance.now();
    for (let i = 0; i < events.length; i += 10) await publish(events.slice(i, i + 10));
    await waitFor('ours drained', async () => (events.every((e) => drainPaths.every((p) => arrived(p, e.id))) ? true : undefined), 600_000, 50);
    const rate = DRAIN / ((performance.now() - started) / 1000);
    const ids = await db('webhook_deliveries')
      .whereIn(
        'event_id',
        events.map((e) => e.id),
      )
      .pluck('id');
    const firstSteps = summary(ids.map((id: string) => prepared.get(id)! - handlerStarted.get(id)!));
    console.log(`    ours: first step (checks and slot claim) p50 ${fmt.ms(firstSteps.p50)}, p95 ${fmt.ms(firstSteps.p95)}`);
    return rate;
  }
  const raw: number[] = [];
  const ours: number[] = [];
  for (let round = 1; round <= ROUNDS; round++) {
    raw.push(await rawRound());
    ours.push(await oursRound());
    console.log(`(c) round ${round}: raw pg-boss ${fmt.rate(raw.at(-1)!, ' jobs/s')}, ours ${fmt.rate(ours.at(-1)!, ' deliveries/s')}   [load ${load()}]`);
  }
  console.log(
    `(c) throughput, ${DRAIN} deliveries over ${FAN_OUT} endpoints: ours / raw = ${fmt.x(median(ours) / median(raw))} (medians ${fmt.rate(median(ours))} / ${fmt.rate(median(raw))})`,
  );
}

await worker.stop();
await sender.stop({ graceful: false, close: true });
await db.destroy();
receiver.closeAllConnections();
receiver.close();
await database.dispose();
