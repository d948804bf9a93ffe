/**
 * Webhook delivery, end to end, against raw pg-boss in the same run, on a throw-away database (an
 * embedded PostgreSQL unless DATABASE_URL names a server). One worker (workers/main.ts startWorker,
 * only the delivery queue, WEBHOOK_DELIVERY_CONCURRENCY slots) and a loopback receiver in this
 * process, so commit and arrival are read on one clock.
 *
 *  (a) idle: BENCH_IDLE events, one at a time, each fanned out (fanOutEvent) to one endpoint in a
 *      transaction of its own; commit → the receiver has the request: p50/p95.
 *  (c) throughput: BENCH_DRAIN deliveries over 10 healthy endpoints queued at once and drained,
 *      against raw pg-boss send + work of as many jobs whose handler POSTs the same body to the same
 *      receiver (same local and group concurrency, each slot fetching again as soon as its job ends,
 *      as ours; no signing, no SSRF guard, no delivery records); the rounds take turns (raw, ours,
 *      raw, ours …, BENCH_ROUNDS each); ratio of the medians, and the statements each sends per delivery.
 *  (b) fan-out: events at a steady rate for BENCH_SECONDS, each to 10 endpoints; first all 10
 *      healthy (the baseline), then with one of them answering after BENCH_SLOW_MS: the healthy
 *      endpoints' commit → arrival p50/p95 in both, and their ratio (1.0: the slow endpoint costs the
 *      others nothing), the delivery rate achieved and the healthy backlog left at the end. The rate:
 *      BENCH_RATE if given, else the highest the box sustains — from (c)'s drain rate ÷ 10, up by a
 *      quarter while the healthy backlog stays flat over a BENCH_PROBE-second probe, down by a fifth while it grows
 *      (its least-squares slope under 5 % of the offered deliveries/s); should the all-healthy run's
 *      backlog then grow over the whole window (the shared box slowed down), it is run again a fifth slower.
 *      A rate beyond the box (the issue's 1,000 events/s) is run for the record: the events are
 *      published by up to 8 transactions at once, the latencies are those of the deliveries that
 *      arrived within BENCH_GRACE seconds of the window's end, and the backlog left is reported (then purged).
 * Flags: --idle=100 --drain=1000 --rounds=2 --rate=<events/s> --seconds=60 --probe=20 --slow-ms=5000 --grace=15 --phases=acb
 *        --slots=<WEBHOOK_DELIVERY_CONCURRENCY> --pool=<the worker's DB_POOL_MAX>
 * Run: npm run bench:webhooks            (finds the sustainable rate)
 *      npm run bench:webhooks -- --rate=1000 --phases=cb
 */
import { randomUUID } from 'node:crypto';
import { runnableJob } from '../src/app/jobs.ts';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
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
import { ascending, fmt, int, load, median, percentile, postgresCpu, readFlags, slope, text, waitFor } from './support/bench.ts';

readFlags();
const IDLE = int('IDLE', 100);
/** 0: find the highest rate the box sustains. */
const RATE = int('RATE', 0);
const SECONDS = int('SECONDS', 60);
const PROBE = int('PROBE', 20);
const SLOW_MS = int('SLOW_MS', 5000);
const GRACE = int('GRACE', 15);
const DRAIN = int('DRAIN', 1000);
const ROUNDS = int('ROUNDS', 2);
const FAN_OUT = 10;
const PHASES = text('PHASES', 'acb');
/** Events published at once at most (the publisher's pool is 10). */
const PUBLISHERS = 8;

// ——— statements sent by this process (the worker runs in it), counted while `counting` ———
// (--statements: which ones, per delivery, after (c).)
let counting = false;
let statements = 0;
const STATEMENTS = int('STATEMENTS', 0) > 0;
const byText = new Map<string, number>();
const query = pg.Client.prototype.query;
pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
  if (counting) {
    statements++;
    if (STATEMENTS) {
      const q = args[0] as string | { text?: string };
      const key = (typeof q === 'string' ? q : (q?.text ?? '?')).replace(/\s+/g, ' ').trim().slice(0, 100);
      byText.set(key, (byText.get(key) ?? 0) + 1);
    }
  }
  return (query as (...a: unknown[]) => unknown).apply(this, args);
} as typeof query;
/** `work`, with the statements this process sent meanwhile and the CPU seconds it and the database server used. */
async function countStatements<T>(work: () => Promise<T>): Promise<{ value: T; statements: number; nodeCpu: number; postgresCpu: number }> {
  statements = 0;
  counting = true;
  const cpu = process.cpuUsage();
  const pgCpu = databaseCpu();
  try {
    const value = await work();
    const used = process.cpuUsage(cpu);
    return { value, statements, nodeCpu: (used.user + used.system) / 1e6, postgresCpu: databaseCpu() - pgCpu };
  } finally {
    counting = false;
  }
}

// ——— the receiver: arrival time of each (path, webhook-id), and arrivals per path ———
const arrivals = new Map<string, number>();
const arrivedOn = new Map<string, number>();
const slowPaths = new Set<string>();
const receiver = http.createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    const at = performance.now();
    const id = req.headers['webhook-id'];
    const path = req.url ?? '';
    if (typeof id === 'string') arrivals.set(`${path}|${id}`, at);
    arrivedOn.set(path, (arrivedOn.get(path) ?? 0) + 1);
    const answer = () => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end('ok');
    };
    if (slowPaths.has(path)) setTimeout(answer, SLOW_MS);
    else answer();
  });
});
await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
const port = (receiver.address() as AddressInfo).port;
const receiverUrl = `http://127.0.0.1:${port}`;

// ——— database, worker, sender ———
const database = await createTestDatabase();
const url = database.url;
// --slots / --pool: the worker's WEBHOOK_DELIVERY_CONCURRENCY and DB_POOL_MAX (default: the config's).
const tuning = {
  ...(process.env.BENCH_SLOTS && { WEBHOOK_DELIVERY_CONCURRENCY: process.env.BENCH_SLOTS }),
  ...(process.env.BENCH_POOL && { DB_POOL_MAX: process.env.BENCH_POOL }),
};
const config = testConfig({ OUTBOUND_ALLOWLIST: `127.0.0.1:${port}`, LOG_LEVEL: 'silent', WORKER_POLL_INTERVAL_SECONDS: '1', ...tuning });
const slots = localConcurrencyOf(webhookDeliveryJob, config);
const log = createLogger(config, 'bench');
const db = createDb(url, { max: PUBLISHERS + 2 });
const databaseCpu = await postgresCpu(db);
const sender = createBoss(url, 'web', { max: 4 });
await sender.start();
const rawJob = defineJob({
  name: 'bench.webhook-raw',
  version: 1,
  nature: 'computes',
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
const arrivedAt = (paths: readonly string[]) => paths.reduce((n, path) => n + (arrivedOn.get(path) ?? 0), 0);
type Summary = { p50: number; p95: number; n: number };
const summary = (ms: number[]): Summary => {
  const sorted = ascending(ms);
  return { p50: percentile(sorted, 50), p95: percentile(sorted, 95), n: sorted.length };
};
const show = (s: Summary) => `p50 ${fmt.ms(s.p50)}, p95 ${fmt.ms(s.p95)} (${s.n} deliveries)`;
/** Delivery jobs not yet ended. */
const openDeliveryJobs = async () =>
  Number(
    (await db('pgboss.job').where({ name: webhookDeliveryJob.name }).whereIn('state', ['created', 'retry', 'active']).first(db.raw('count(*)::int AS n'))).n,
  );

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
/** Attempts that went back to wait (a slot wait: every slot of the endpoint held), counted by the runtime's observer. */
let snoozes = 0;
const worker = await startWorker(config, url, log, {
  jobs: [marked],
  observer: { attemptStarted: () => {}, attemptEnded: (_queue, outcome) => void (outcome === 'deferred' && snoozes++) },
});
console.log(`bench:webhooks — load ${load()}, one worker (delivery queue: ${slots} slots, ${ENDPOINT_CONCURRENCY} per endpoint)`);

const paths = (prefix: string) => Array.from({ length: FAN_OUT }, (_, i) => `/${prefix}${i}`);

/**
 * Raw pg-boss working `rawJob`: its handler POSTs `body` to the job's path (the baseline of (a) and
 * (c)). Its slots fetch as ours do (src/jobs/slots.ts, bench/support/raw-worker.ts): pg-boss's own
 * pacing, and each slot that worked a job fetches again at once — without that, a slot sleeps its
 * polling interval after every job until pg-boss's cached queue stats (refreshed every minute) show
 * the backlog, and the baseline measures the interval, not pg-boss.
 */
async function rawWorker(body: string) {
  const boss = createBoss(url, 'worker', { max: 4 });
  boss.on('error', (error) => console.error('raw pg-boss error', error));
  await boss.start();
  const workId = await boss.work(
    rawJob.name,
    {
      batchSize: 1,
      localConcurrency: slots,
      groupConcurrency: ENDPOINT_CONCURRENCY,
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
      } finally {
        for (const slot of boss.getWipData()) if (slot.workId === workId && slot.count > 0) boss.notifyWorker(slot.id);
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

/** Our drain rate (deliveries/s) from (c): where the search for the sustainable rate starts. */
let drainRate = Number.NaN;

if (PHASES.includes('c')) {
  // (c) throughput: drain DRAIN deliveries, ours vs raw pg-boss (its handler POSTs the same body).
  const drainPaths = paths('drain');
  await endpoints('asset.import.succeeded', drainPaths);
  const body = JSON.stringify(event('asset.import.succeeded'));
  type Round = { rate: number; statements: number; nodeCpu: number; postgresCpu: number };
  async function rawRound(): Promise<Round> {
    const boss = await rawWorker(body);
    const ids = Array.from({ length: DRAIN }, () => randomUUID());
    const { value: rate, ...counted } = await countStatements(async () => {
      const started = performance.now();
      for (let i = 0; i < DRAIN; i += 100)
        await sender.insert(
          rawJob.name,
          ids
            .slice(i, i + 100)
            .map((id, j) => ({ data: { delivery_id: id, path: drainPaths[(i + j) % FAN_OUT] }, group: { id: drainPaths[(i + j) % FAN_OUT]! } })),
        );
      await waitFor('raw drained', async () => (ids.every((id, n) => arrived(drainPaths[n % FAN_OUT]!, id)) ? true : undefined), 600_000, 50);
      return DRAIN / ((performance.now() - started) / 1000);
    });
    await boss.stop({ graceful: false, close: true });
    return { rate, ...counted };
  }
  async function oursRound(): Promise<Round> {
    const events = Array.from({ length: DRAIN / FAN_OUT }, () => event('asset.import.succeeded'));
    byText.clear();
    const { value: rate, ...counted } = await countStatements(async () => {
      const started = performance.now();
      for (let i = 0; i < events.length; i += 10) await publish(events.slice(i, i + 10));
      await waitFor('ours drained', async () => (events.every((e) => drainPaths.every((p) => arrived(p, e.id))) ? true : undefined), 600_000, 50);
      return DRAIN / ((performance.now() - started) / 1000);
    });
    // Completions land just after the arrivals: settled before the next round starts.
    await waitFor('our jobs completed', async () => ((await openDeliveryJobs()) === 0 ? true : undefined), 60_000, 50);
    const ids = await db('webhook_deliveries')
      .whereIn(
        'event_id',
        events.map((e) => e.id),
      )
      .pluck('id');
    const firstSteps = summary(ids.map((id: string) => prepared.get(id)! - handlerStarted.get(id)!));
    console.log(`    ours: first step (checks and slot claim) p50 ${fmt.ms(firstSteps.p50)}, p95 ${fmt.ms(firstSteps.p95)}`);
    if (STATEMENTS)
      for (const [text, n] of [...byText].sort((a, b) => b[1] - a[1]).slice(0, 20)) console.log(`      ${(n / DRAIN).toFixed(2).padStart(5)} × ${text}`);
    return { rate, ...counted };
  }
  const raw: Round[] = [];
  const ours: Round[] = [];
  for (let round = 1; round <= ROUNDS; round++) {
    raw.push(await rawRound());
    ours.push(await oursRound());
    console.log(
      `(c) round ${round}: raw pg-boss ${fmt.rate(raw.at(-1)!.rate, ' jobs/s')}, ours ${fmt.rate(ours.at(-1)!.rate, ' deliveries/s')}   [load ${load()}]`,
    );
  }
  drainRate = median(ours.map((r) => r.rate));
  const rawRate = median(raw.map((r) => r.rate));
  const per = (rounds: Round[], of: (round: Round) => number, scale = 1) => ((median(rounds.map(of)) / DRAIN) * scale).toFixed(1);
  console.log(
    `(c) throughput, ${DRAIN} deliveries over ${FAN_OUT} endpoints: ours / raw = ${fmt.x(drainRate / rawRate)} (medians ${fmt.rate(drainRate)} / ${fmt.rate(rawRate)})`,
  );
  console.log(
    `    per delivery, ours / raw: statements this process sent (publishing included) ${per(ours, (r) => r.statements)} / ${per(raw, (r) => r.statements)}; CPU ms of this process (worker, receiver, publisher) ${per(ours, (r) => r.nodeCpu, 1000)} / ${per(raw, (r) => r.nodeCpu, 1000)}, of the database server ${per(ours, (r) => r.postgresCpu, 1000)} / ${per(raw, (r) => r.postgresCpu, 1000)}`,
  );
}

interface FanOut {
  /** The healthy endpoints' commit → arrival, of the deliveries that arrived (all of them unless over capacity). */
  latency: Summary;
  published: number;
  /** Deliveries that arrived at any endpoint within the window, per second. */
  deliveredRate: number;
  /** Healthy deliveries published but not arrived: at the window's end, and when the latencies were read. */
  backlogAtEnd: number;
  backlogLeft: number;
  /** Least-squares slope of the healthy backlog over the window's second half (deliveries/s). */
  growth: number;
  /** Attempts that found every slot of their endpoint held and waited 2–3 s (any endpoint). */
  snoozes: number;
  /** CPU ms per delivery arrived within the window: this process's and the database server's. */
  nodeCpuMs: number;
  postgresCpuMs: number;
}

/**
 * Events of `type` at `rate`/s for `seconds`, each fanned out to the endpoints at `all` (`healthy`
 * among them), published by up to PUBLISHERS transactions at once (a publisher behind stops at
 * the window's end). Then waits for every healthy delivery — at most `graceSeconds` when given
 * (over capacity), after which the rest are counted as the backlog left.
 */
async function fanOut(type: WebhookEvent['type'], all: string[], healthy: string[], rate: number, seconds: number, graceSeconds?: number): Promise<FanOut> {
  const sent: { id: string; at: number }[] = [];
  const inFlight = new Set<Promise<void>>();
  const healthyBefore = arrivedAt(healthy);
  const snoozesBefore = snoozes;
  const cpuBefore = process.cpuUsage();
  const pgCpuBefore = databaseCpu();
  const allBefore = arrivedAt(all);
  const backlog = () => sent.length * healthy.length - (arrivedAt(healthy) - healthyBefore);
  const started = performance.now();
  const samples: { x: number; y: number }[] = [];
  const sampler = setInterval(() => samples.push({ x: (performance.now() - started) / 1000, y: backlog() }), 500);
  const end = started + seconds * 1000;
  for (let i = 0; ; i++) {
    const due = started + (i * 1000) / rate;
    if (due >= end) break;
    const wait = due - performance.now();
    if (wait > 0) await sleep(wait);
    while (inFlight.size >= PUBLISHERS) await Promise.race(inFlight);
    if (performance.now() >= end) break;
    const e = event(type);
    const publishing: Promise<void> = publish([e]).then((at) => {
      sent.push({ id: e.id, at });
      inFlight.delete(publishing);
    });
    inFlight.add(publishing);
  }
  await Promise.all(inFlight);
  const windowMs = performance.now() - started;
  const deliveredInWindow = arrivedAt(all) - allBefore;
  const deliveredRate = deliveredInWindow / (windowMs / 1000);
  const cpu = process.cpuUsage(cpuBefore);
  const nodeCpuMs = (cpu.user + cpu.system) / 1000 / deliveredInWindow;
  const postgresCpuMs = ((databaseCpu() - pgCpuBefore) * 1000) / deliveredInWindow;
  const backlogAtEnd = backlog();
  clearInterval(sampler);
  const half = samples.filter((sample) => sample.x >= seconds / 2);
  const growth = slope(half);
  const deadline = performance.now() + (graceSeconds ?? 600) * 1000;
  await waitFor('the healthy deliveries', async () => (backlog() === 0 || performance.now() > deadline ? true : undefined), 700_000, 20);
  const latencies: number[] = [];
  for (const { id, at } of sent)
    for (const path of healthy) {
      const arrival = arrived(path, id);
      if (arrival !== undefined) latencies.push(arrival - at);
    }
  return {
    latency: summary(latencies),
    published: sent.length,
    deliveredRate,
    backlogAtEnd,
    backlogLeft: backlog(),
    growth,
    snoozes: snoozes - snoozesBefore,
    nodeCpuMs,
    postgresCpuMs,
  };
}

/** Ends what is left of a run: the slow endpoint answers at once again, and a backlog beyond `graceSeconds`' worth is purged. */
async function settle(purge: boolean): Promise<void> {
  slowPaths.clear();
  if (purge) await db('pgboss.job').where({ name: webhookDeliveryJob.name }).whereIn('state', ['created', 'retry']).delete();
  await waitFor('the delivery queue drained', async () => ((await openDeliveryJobs()) === 0 ? true : undefined), 600_000, 200);
}

if (PHASES.includes('b')) {
  let rate = RATE;
  // A rate given may be beyond the box: its runs wait at most GRACE s for the healthy deliveries, and purge the rest.
  const bounded = RATE > 0;
  if (rate === 0) {
    // The highest rate the box sustains: from the drain rate ÷ 10, up by a quarter while the healthy
    // backlog stays flat, down by a fifth while it grows; the last flat rate (at most 6 probes).
    const capacity = Number.isFinite(drainRate) ? drainRate : 100;
    let next = Math.max(1, Math.floor(capacity / FAN_OUT));
    let sustained = 0;
    let lowestGrowing = Number.POSITIVE_INFINITY;
    for (let probe = 1; probe <= 6 && next < lowestGrowing && next > sustained; probe++) {
      const probePaths = paths(`probe${probe}-`);
      await endpoints('invitation.accepted', probePaths);
      const run = await fanOut('invitation.accepted', probePaths, probePaths, next, PROBE, 5);
      const offered = next * FAN_OUT;
      const flat = run.growth < 0.05 * offered;
      console.log(
        `(b) probe ${probe}: ${next} events/s × ${FAN_OUT} for ${PROBE} s: delivered ${fmt.rate(run.deliveredRate)} of ${offered}/s offered, healthy backlog at the end ${run.backlogAtEnd}, growing ${run.growth.toFixed(1)}/s over the second half: ${flat ? 'flat' : 'growing'}   [load ${load()}]`,
      );
      await settle(!flat);
      await db('webhook_endpoints')
        .whereIn(
          'url',
          probePaths.map((path) => `${receiverUrl}${path}`),
        )
        .update({ enabled: false });
      if (flat) sustained = Math.max(sustained, next);
      else lowestGrowing = Math.min(lowestGrowing, next);
      next = flat ? Math.max(next + 1, Math.floor(next * 1.25)) : Math.max(1, Math.floor(next * 0.8));
      if (!flat && next === lowestGrowing) next--;
      if (next < 1) break;
    }
    rate = Math.max(1, sustained);
    console.log(`(b) the highest rate this box sustains here: ${rate} events/s × ${FAN_OUT} endpoints = ${rate * FAN_OUT} deliveries/s`);
  }
  const grace = bounded ? GRACE : undefined;
  const show2 = (run: FanOut) =>
    `${show(run.latency)}; published ${fmt.rate(run.published / SECONDS, ' events/s')}, delivered ${fmt.rate(run.deliveredRate, ' deliveries/s')}, ${run.snoozes} slot waits (any endpoint), CPU per delivery ${fmt.ms(run.nodeCpuMs)} here + ${fmt.ms(run.postgresCpuMs)} database; healthy backlog ${run.backlogAtEnd} at the window's end${bounded ? `, ${run.backlogLeft} ${GRACE} s later (purged)` : ''}`;
  // The all-healthy baseline; a found rate whose backlog grew over the whole run (the shared box
  // slowed down meanwhile) is stepped down by a fifth and run again, twice at most.
  let baseline: FanOut;
  for (let attempt = 1; ; attempt++) {
    const baselinePaths = paths(`base${attempt}-`);
    await endpoints('member.added', baselinePaths);
    baseline = await fanOut('member.added', baselinePaths, baselinePaths.slice(1), rate, SECONDS, grace);
    const flat = baseline.growth < 0.05 * rate * FAN_OUT;
    console.log(
      `(b) fan-out ×${FAN_OUT} at ${rate} events/s for ${SECONDS} s, all healthy — the 9 compared: ${show2(baseline)}; backlog ${flat ? 'flat' : `growing ${baseline.growth.toFixed(1)}/s`}   [load ${load()}]`,
    );
    await settle(bounded || !flat);
    await db('webhook_endpoints')
      .whereIn(
        'url',
        baselinePaths.map((path) => `${receiverUrl}${path}`),
      )
      .update({ enabled: false });
    if (flat || RATE > 0 || attempt === 3 || rate === 1) break;
    rate = Math.max(1, Math.floor(rate * 0.8));
    console.log(`    not sustained for ${SECONDS} s: again at ${rate} events/s`);
  }
  const slowCase = paths('slow');
  slowPaths.add(slowCase[0]!);
  await endpoints('member.removed', slowCase);
  const withSlow = await fanOut('member.removed', slowCase, slowCase.slice(1), rate, SECONDS, grace);
  console.log(
    `    with ${slowCase[0]} answering after ${SLOW_MS} ms — the 9 healthy: ${show2(withSlow)}; p95 ratio ${fmt.x(withSlow.latency.p95 / baseline.latency.p95)}, p50 ratio ${fmt.x(withSlow.latency.p50 / baseline.latency.p50)}   [load ${load()}]`,
  );
  await settle(true);
}

await worker.stop();
await sender.stop({ graceful: false, close: true });
await db.destroy();
receiver.closeAllConnections();
receiver.close();
await database.dispose();
