/**
 * One chat turn end to end, as a client sees it: POST /conversations/{id}/run, then at once
 * GET /conversations/{id}/run/events (the events endpoint answers 404 until a run exists), on a
 * web process and an in-process worker (all jobs, NOTIFY pick-up) sharing one embedded PostgreSQL,
 * with the sandbox chat model streaming without pause (CHAT_SANDBOX_DELAY_MS=0). Per turn:
 *  (a) POST /run sent → first `delta` or non-empty `snapshot` event received,
 *  (b) POST /run sent → `done` event received,
 *  (c) POST /run response time.
 * The conversation and its user message are made over HTTP before each turn, untimed.
 * Baselines, measured in the same run and interleaved with the turns in BENCH_ROUNDS rounds (the
 * machine's speed swings from minute to minute, see docs/benchmarks.md):
 *  - bare Koa 3 + pg.Pool answering one single-row SELECT (one request at a time, fetch client),
 *  - raw pg-boss send → handler start on a bare PgBoss (createBoss 'worker' role, LISTEN/NOTIFY)
 *    with the polling settings workers/main.ts uses.
 * Ratios are the median over rounds of (turn p50 / baseline p50 of the same round).
 * Then a tool phase (issue 24): BENCH_TOOL_TURNS turns whose user message makes the sandbox model
 * call 3 billed `search` tools in one round (each through the metered path: call, hold, job,
 * settle), then answer. Its baseline, measured in the same run right before each turn: the bare
 * provider time of the same work in-process (the sandbox chat model's two calls and the sandbox
 * search provider's three searches, in parallel as the turn runs them); the overhead is
 * POST /run → done minus that. Goal: overhead p50 ≤ 100 ms.
 * Then a phase: BENCH_CONCURRENCY conversations take turns in parallel.
 * Then the streams phase (issue 34): BENCH_STREAM_TURNS (100; 0 skips) turns in flight at once, the
 * sandbox model pausing BENCH_STREAM_DELAY_MS (40) between words, on BENCH_STREAM_WORKERS (2) fresh
 * in-process workers of 64 chat slots each (the first worker stopped): POST /run → first text
 * p50/p95, and the NOTIFYs on the run-event channel (a LISTEN client counts them) against the
 * ticks elapsed × workers (CHAT_STREAM_TICK_MS) and the words streamed. Goal: first text p95 ≤ 250 ms.
 * Goal (issue): POST /run → first streamed delta, p50 ≤ 30 ms on an idle machine.
 * Env: BENCH_TURNS (100), BENCH_TOOL_TURNS (30; 0 skips the phase), BENCH_CONCURRENCY (8; 0 skips the phase), BENCH_ROUNDS (5), BENCH_LOG_LEVEL,
 * BENCH_SANDBOX_DELAY_MS (0; e.g. 40 for a model that streams a word every 40 ms).
 * Run: npm run bench:chat   (embedded PostgreSQL, throw-away database; ~1 min)
 */
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import { loadavg } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { signToken } from '../src/auth/sign.ts';
import { chatRunJob } from '../src/conversations/jobs.ts';
import { grantCredits } from '../src/credits/ledger.ts';
import { sseEvents } from '../test/support/sse.ts';
import { startBareKoa } from './support/bare-koa.ts';
import { createDb } from '../src/db/knex.ts';
import { createBoss } from '../src/jobs/boss.ts';
import { createLogger } from '../src/platform/logger.ts';
import { startWeb } from '../src/web.ts';
import { TEST_JWT_SECRET, testConfig } from '../test/support/config.ts';
import { createTestDatabase } from '../test/support/database.ts';
import { startWorker } from '../workers/main.ts';
import { SandboxChatProvider } from '../src/providers/chat/sandbox.ts';
import type { ChatChunk, ChatMessage, ChatToolCall } from '../src/providers/chat/types.ts';
import { SandboxSearchProvider } from '../src/providers/search/sandbox.ts';
import { readFlags } from './support/bench.ts';

// --name=value flags as BENCH_NAME; `--help` prints the comment above.
readFlags();

const TURNS = Number(process.env.BENCH_TURNS ?? 100);
const TOOL_TURNS = Number(process.env.BENCH_TOOL_TURNS ?? 30);
const TOOL_GOAL_MS = 100;
const TOOL_QUESTION = ['/tool search {"query":"atlantic tides"}', '/tool search {"query":"moon phases"}', '/tool search {"query":"storm surge"}'].join('\n');
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 8);
const STREAM_TURNS = Number(process.env.BENCH_STREAM_TURNS ?? 100);
const STREAM_WORKERS = Math.max(1, Number(process.env.BENCH_STREAM_WORKERS ?? 2));
const STREAM_GOAL_MS = 250;
const ROUNDS = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 5));
const BARE_PER_ROUND = 50;
const GOAL_MS = 30;

interface Turn {
  /** POST /run response time. */
  post: number;
  /** POST /run → first `delta` or non-empty `snapshot`; the `done` time when the stream carried no text. */
  first: number;
  /** POST /run → `done`. */
  done: number;
  /** The wall clock (ms) at the first text event (the `done` time without text): compared with the job's start in the database. */
  firstAt: number;
  /** The stream opened after the run had ended: `done` only, no text. */
  doneOnly: boolean;
  runId: string;
}

const pct = (values: number[], p: number) => {
  const sorted = [...values].sort((x, y) => x - y);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? Number.NaN;
};
const median = (values: number[]) => pct(values, 50);
const ms = (value: number) => `${value.toFixed(1).padStart(6)} ms`;
const summary = (values: number[]) => `p50 ${ms(pct(values, 50))}  p95 ${ms(pct(values, 95))}  p99 ${ms(pct(values, 99))}  (n=${values.length})`;

const overrides = {
  NODE_ENV: 'production',
  CHAT_SANDBOX_DELAY_MS: process.env.BENCH_SANDBOX_DELAY_MS ?? '0',
  WORKER_POLL_INTERVAL_SECONDS: '0.5',
  RATE_LIMIT_PER_MINUTE: '100000000',
  RATE_LIMIT_PER_ADDRESS_PER_MINUTE: '100000000',
  LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'silent',
};
const config = testConfig(overrides);
const log = createLogger(config, 'bench');
const loadBefore = loadavg()[0]!;

const database = await createTestDatabase();
const db = createDb(database.url, { max: 2 });
const web = await startWeb(config, database.url, log);
let worker = await startWorker(config, database.url, log);
const base = `http://127.0.0.1:${(web.server.address() as AddressInfo).port}`;

// Baseline: bare Koa + pg (bench/support/bare-koa.ts).
const bareKoa = await startBareKoa(database.url);
const bareUrl = bareKoa.url;

// Baseline 2: raw pg-boss, a sender as the web process has and a bare worker instance.
const QUEUE = 'bench.chat-baseline';
const sender = createBoss(database.url, 'web');
const bossWorker = createBoss(database.url, 'worker', { supervise: false, schedule: false });
await sender.start();
await bossWorker.start();
await sender.createQueue(QUEUE, { notify: true });
let picked: ((at: number) => void) | undefined;
await bossWorker.work<{ n: number }>(
  QUEUE,
  {
    batchSize: 1,
    localConcurrency: config.WORKER_CONCURRENCY,
    pollingIntervalSeconds: Math.min(2, config.WORKER_POLL_INTERVAL_SECONDS),
    notifyPollingIntervalSeconds: config.WORKER_POLL_INTERVAL_SECONDS,
    burstWhenReadyExceeds: 1,
  },
  async () => {
    picked?.(performance.now());
  },
);

const owner = { id: 'bench-owner', email: 'owner@bench.test', name: 'Bench Owner' };
const token = signToken(TEST_JWT_SECRET, { sub: owner.id, email: owner.email, name: owner.name, ttlSeconds: 3600 });
const auth = { authorization: `Bearer ${token}` };

async function api(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { ...auth, ...(body !== undefined && { 'content-type': 'application/json' }) },
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

function expectStatus(what: string, res: { status: number; body: unknown }, status: number) {
  if (res.status !== status) throw new Error(`${what}: ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`);
}

let sequence = 0;
/** A conversation with one user message (untimed). */
async function conversationWithQuestion(organizationId: string, content?: string): Promise<string> {
  const n = sequence++;
  const conversation = await api('POST', '/conversations', { organization_id: organizationId, title: `Bench turn ${n}` });
  expectStatus('create conversation', conversation, 201);
  const id = conversation.body.conversation?.id ?? conversation.body.id;
  const message = await api('POST', `/conversations/${id}/messages`, { content: content ?? `Question ${n}: how do the tides of the Atlantic work?` });
  expectStatus('post message', message, 201);
  return id;
}

/** POST /run, then at once GET /run/events; the SSE stream is read until the server ends it. */
async function turn(conversationId: string, opened?: () => void): Promise<Turn> {
  const started = performance.now();
  const run = await api('POST', `/conversations/${conversationId}/run`, {});
  const post = performance.now() - started;
  expectStatus('POST /run', run, 201);
  const res = await fetch(`${base}/conversations/${conversationId}/run/events`, { headers: { ...auth, accept: 'text/event-stream' } });
  opened?.();
  if (res.status !== 200) throw new Error(`GET /run/events: ${res.status} ${await res.text()}`);
  let first: number | undefined;
  let firstAt: number | undefined;
  let done: number | undefined;
  let status: string | undefined;
  for await (const { event, data } of sseEvents(res.body as unknown as AsyncIterable<Uint8Array>)) {
    const at = performance.now() - started;
    const payload = data as { content?: string; text?: string; status?: string };
    if (first === undefined && ((event === 'snapshot' && payload.content) || (event === 'delta' && payload.text))) {
      first = at;
      firstAt = Date.now();
    }
    if (event === 'done') {
      done ??= at;
      status = payload.status;
    }
  }
  if (done === undefined || status !== 'succeeded') throw new Error(`run ${run.body.run.id}: stream ended without a succeeded done (${status})`);
  return { post, first: first ?? done, firstAt: firstAt ?? Date.now(), done, doneOnly: first === undefined, runId: run.body.run.id };
}

/** The bare provider time of a 3-tool turn: the sandbox model's two calls and the three searches, in-process, as the turn runs them. */
const bareChat = new SandboxChatProvider(config.CHAT_SANDBOX_DELAY_MS);
const bareSearch = new SandboxSearchProvider();
const benchTools = [{ name: 'search', description: 'Web search', parameters: { type: 'object' } }];
async function bareToolProvider(): Promise<number> {
  const started = performance.now();
  const drain = async (messages: ChatMessage[]) => {
    const chunks: ChatChunk[] = [];
    for await (const chunk of bareChat.stream({ model: 'sandbox-chat', provider: 'sandbox', messages, tools: benchTools })) chunks.push(chunk);
    return chunks;
  };
  const question: ChatMessage[] = [{ role: 'user', content: TOOL_QUESTION }];
  const calls = (await drain(question)).flatMap((chunk) => ('tool_calls' in chunk ? chunk.tool_calls : [])) as ChatToolCall[];
  const signal = new AbortController().signal;
  const results = await Promise.all(
    calls.map((call) => bareSearch.search({ ...JSON.parse(call.arguments), limit: 10 }, { signal, maxPages: 1 }).then(({ result }) => JSON.stringify(result))),
  );
  await drain([
    ...question,
    { role: 'assistant', content: '', tool_calls: calls },
    ...calls.map((call, i) => ({ role: 'tool' as const, tool_call_id: call.id, content: results[i]! })),
  ]);
  return performance.now() - started;
}

async function bareRequest(): Promise<number> {
  const started = performance.now();
  const res = await fetch(bareUrl);
  await res.arrayBuffer();
  return performance.now() - started;
}

async function bossPickup(n: number): Promise<number> {
  const got = new Promise<number>((resolve) => (picked = resolve));
  const started = performance.now();
  await sender.send(QUEUE, { n });
  return (await got) - started;
}

/** Server-side split of turns, from the job and run rows: enqueue → job start, job start → job end. */
async function breakdown(runIds: string[]): Promise<string> {
  const { rows } = await db.raw(
    `SELECT extract(epoch FROM j.started_on - j.created_on) * 1000 AS pickup,
            extract(epoch FROM j.completed_on - j.started_on) * 1000 AS handler
       FROM pgboss.job j WHERE j.name = ? AND j.data->>'run_id' = ANY(?)`,
    [chatRunJob.name, runIds],
  );
  const pickup = (rows as { pickup: string }[]).map((r) => Number(r.pickup));
  const handler = (rows as { handler: string }[]).map((r) => Number(r.handler));
  return `job enqueued (POST's transaction start) → handler start p50 ${pct(pickup, 50).toFixed(1)} ms; handler (hold, stream, answer, capture) p50 ${pct(handler, 50).toFixed(1)} ms`;
}

try {
  const org = await api('POST', '/organizations', { name: 'Bench Chat' });
  expectStatus('create organization', org, 201);
  const organizationId: string = org.body.organization.id;
  // Enough credits for any number of turns (the starter credits end after ≈ 100 tool turns).
  await db.transaction((trx) => grantCredits(trx, { organizationId, source: 'purchase', amount: 1_000_000_000, description: 'Bench credits' }));

  // Warm-up: the LISTEN connection, pools, JIT.
  for (let i = 0; i < 5; i++) {
    await turn(await conversationWithQuestion(organizationId));
    await bareRequest();
    await bossPickup(-1);
  }

  const turns: Turn[] = [];
  const bareMs: number[] = [];
  const bossMs: number[] = [];
  const ratios = { bare: [] as number[], boss: [] as number[] };
  for (let round = 0; round < ROUNDS; round++) {
    const roundBare: number[] = [];
    const roundBoss: number[] = [];
    const roundTurns: Turn[] = [];
    for (let i = 0; i < BARE_PER_ROUND; i++) roundBare.push(await bareRequest());
    const count = Math.floor(TURNS / ROUNDS) + (round < TURNS % ROUNDS ? 1 : 0);
    for (let i = 0; i < count; i++) {
      roundBoss.push(await bossPickup(i));
      await sleep(5);
      const conversation = await conversationWithQuestion(organizationId);
      roundTurns.push(await turn(conversation));
    }
    const firstP50 = median(roundTurns.map((t) => t.first));
    ratios.bare.push(firstP50 / median(roundBare));
    ratios.boss.push(firstP50 / median(roundBoss));
    bareMs.push(...roundBare);
    bossMs.push(...roundBoss);
    turns.push(...roundTurns);
  }

  const firstP50 = median(turns.map((t) => t.first));
  const range = (values: number[]) => `rounds ${Math.min(...values).toFixed(1)}–${Math.max(...values).toFixed(1)}`;
  console.log(
    `\n== ${turns.length} sequential turns in ${ROUNDS} rounds, interleaved with the baselines; sandbox delay ${config.CHAT_SANDBOX_DELAY_MS} ms/word (load average ${loadBefore.toFixed(2)} at start)`,
  );
  console.log(`(a) POST /run → first text event   ${summary(turns.map((t) => t.first))}`);
  console.log(`(b) POST /run → done               ${summary(turns.map((t) => t.done))}`);
  console.log(`(c) POST /run response             ${summary(turns.map((t) => t.post))}`);
  console.log(`    streams that opened after the run ended (done only, no text; (a) = done): ${turns.filter((t) => t.doneOnly).length}/${turns.length}`);
  console.log(`    ${await breakdown(turns.map((t) => t.runId))}`);
  console.log(`baseline: bare Koa + pg SELECT     ${summary(bareMs)}`);
  console.log(`baseline: pg-boss send → handler   ${summary(bossMs)}`);
  console.log(`ratio (a) p50 / bare Koa + pg p50: ${median(ratios.bare).toFixed(1)}× (${range(ratios.bare)})`);
  console.log(`ratio (a) p50 / pg-boss pickup p50: ${median(ratios.boss).toFixed(1)}× (${range(ratios.boss)})`);
  console.log(`goal: first delta p50 ≤ ${GOAL_MS} ms: ${firstP50 <= GOAL_MS ? 'MET' : 'NOT MET'} (${firstP50.toFixed(1)} ms)`);

  if (TOOL_TURNS > 0) {
    const toolTurns: Turn[] = [];
    const bareTool: number[] = [];
    const overheads: number[] = [];
    for (let i = 0; i < TOOL_TURNS; i++) {
      const bare = await bareToolProvider();
      const conversation = await conversationWithQuestion(organizationId, TOOL_QUESTION);
      const measured = await turn(conversation);
      const got = await api('GET', `/conversations/${conversation}/run`);
      const calls = got.body.run.tool_calls as { status: string }[];
      if (calls.length !== 3 || calls.some((c) => c.status !== 'succeeded')) throw new Error(`tool turn ${measured.runId}: ${JSON.stringify(calls)}`);
      bareTool.push(bare);
      toolTurns.push(measured);
      overheads.push(measured.done - bare);
    }
    const overheadP50 = median(overheads);
    console.log(`\n== ${toolTurns.length} turns with 3 sandbox tool calls (billed search, metered path), sequential`);
    console.log(`(b) POST /run → done               ${summary(toolTurns.map((t) => t.done))}`);
    console.log(`(a) POST /run → first text event   ${summary(toolTurns.map((t) => t.first))}`);
    console.log(`baseline: bare provider time        ${summary(bareTool)}`);
    console.log(`overhead (done − bare provider)    ${summary(overheads)}`);
    console.log(`ratio done p50 / bare provider p50: ${(median(toolTurns.map((t) => t.done)) / Math.max(0.001, median(bareTool))).toFixed(1)}×`);
    console.log(`goal: overhead p50 ≤ ${TOOL_GOAL_MS} ms: ${overheadP50 <= TOOL_GOAL_MS ? 'MET' : 'NOT MET'} (${overheadP50.toFixed(1)} ms)`);
  }

  if (CONCURRENCY > 0) {
    const parallel: Turn[] = [];
    let left = TURNS;
    const started = performance.now();
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (left > 0) {
          left--;
          const conversation = await conversationWithQuestion(organizationId);
          parallel.push(await turn(conversation));
        }
      }),
    );
    const seconds = (performance.now() - started) / 1000;
    console.log(
      `\n== ${parallel.length} turns, ${CONCURRENCY} conversations in parallel (${(parallel.length / seconds).toFixed(1)} turns/s incl. untimed setup)`,
    );
    console.log(`(a) POST /run → first text event   ${summary(parallel.map((t) => t.first))}`);
    console.log(`(b) POST /run → done               ${summary(parallel.map((t) => t.done))}`);
    console.log(`(c) POST /run response             ${summary(parallel.map((t) => t.post))}`);
    console.log(`    done only: ${parallel.filter((t) => t.doneOnly).length}/${parallel.length}; ${await breakdown(parallel.map((t) => t.runId))}`);
  }
  if (STREAM_TURNS > 0) {
    // Slots for every turn at once: 64 a worker (WORKER_CONCURRENCY's most), no per-organization share below it.
    const streamConfig = testConfig({
      ...overrides,
      CHAT_SANDBOX_DELAY_MS: process.env.BENCH_STREAM_DELAY_MS ?? '40',
      WORKER_CONCURRENCY: '64',
      JOB_ORGANIZATION_CONCURRENCY: String(64 * STREAM_WORKERS),
      DB_POOL_MAX: '60',
    });
    await worker.stop();
    const streamWorkers = await Promise.all(Array.from({ length: STREAM_WORKERS }, () => startWorker(streamConfig, database.url, log)));
    worker = streamWorkers[0]!;
    const listener = new pg.Client({ connectionString: database.url });
    await listener.connect();
    let textNotifies = 0;
    let endNotifies = 0;
    listener.on('notification', (message) => {
      const payload = JSON.parse(message.payload ?? '{}') as { keys?: unknown };
      if (Array.isArray(payload.keys)) textNotifies++;
      else endNotifies++;
    });
    await listener.query('LISTEN chat_run_events');
    const conversations: string[] = [];
    for (let i = 0; i < STREAM_TURNS; i++) conversations.push(await conversationWithQuestion(organizationId));
    const streamed: Turn[] = [];
    const started = performance.now();
    // POSTs four at a time (the web pool's size bounds concurrent starts today); each stream followed at once, all in flight together.
    let next = 0;
    const following: Promise<void>[] = [];
    await Promise.all(
      Array.from({ length: 4 }, async () => {
        while (next < conversations.length) {
          const conversation = conversations[next++]!;
          let opened!: () => void;
          const open = new Promise<void>((resolve) => (opened = resolve));
          following.push(
            turn(conversation, opened).then((t) => {
              streamed.push(t);
            }),
          );
          await open;
        }
      }),
    );
    await Promise.all(following);
    const elapsed = performance.now() - started;
    await listener.end();
    for (const w of streamWorkers.slice(1)) await w.stop();
    const { rows } = await db.raw(
      `SELECT coalesce(sum(array_length(regexp_split_to_array(snapshot, '\\s+'), 1)), 0)::int AS words FROM chat_runs WHERE id = ANY(?)`,
      [streamed.map((t) => t.runId)],
    );
    const ticks = Math.ceil(elapsed / streamConfig.CHAT_STREAM_TICK_MS);
    // The streaming path alone: the turn's job start (its last attempt, database clock, same machine) → the reader's first text.
    const starts = await db.raw(
      `SELECT j.data->>'run_id' AS run_id, extract(epoch FROM max(j.started_on)) * 1000 AS started FROM pgboss.job j WHERE j.name = ? AND j.data->>'run_id' = ANY(?) GROUP BY 1`,
      [chatRunJob.name, streamed.map((t) => t.runId)],
    );
    const startOf = new Map((starts.rows as { run_id: string; started: string }[]).map((r) => [r.run_id, Number(r.started)]));
    const fromStart = streamed.map((t) => t.firstAt - (startOf.get(t.runId) ?? Number.NaN));
    const firstP95 = pct(
      streamed.map((t) => t.first),
      95,
    );
    console.log(
      `\n== ${streamed.length} turns in flight at once on ${STREAM_WORKERS} workers, sandbox delay ${streamConfig.CHAT_SANDBOX_DELAY_MS} ms/word, tick ${streamConfig.CHAT_STREAM_TICK_MS} ms (${(elapsed / 1000).toFixed(1)} s)`,
    );
    console.log(`(a) POST /run → first text event   ${summary(streamed.map((t) => t.first))}`);
    console.log(`(b) POST /run → done               ${summary(streamed.map((t) => t.done))}`);
    console.log(`(c) POST /run response             ${summary(streamed.map((t) => t.post))}`);
    console.log(`(d) job start → first text event   ${summary(fromStart)}`);
    console.log(`    done only: ${streamed.filter((t) => t.doneOnly).length}/${streamed.length}; ${await breakdown(streamed.map((t) => t.runId))}`);
    console.log(
      `NOTIFYs: ${textNotifies} of streamed text (ticks elapsed ${ticks} × ${STREAM_WORKERS} workers = ${ticks * STREAM_WORKERS}; words streamed ${rows[0].words}), ${endNotifies} of runs' ends and tools`,
    );
    console.log(`baseline (same run): bare Koa + pg SELECT p50 ${ms(median(bareMs))}; pg-boss send → handler p50 ${ms(median(bossMs))}`);
    console.log(`goal: first text p95 ≤ ${STREAM_GOAL_MS} ms: ${firstP95 <= STREAM_GOAL_MS ? 'MET' : 'NOT MET'} (${firstP95.toFixed(1)} ms)`);
  }
  console.log(`\nload average at end ${loadavg()[0]!.toFixed(2)}`);
} finally {
  await worker.stop();
  await web.stop();
  await bossWorker.stop({ graceful: false, close: true });
  await sender.stop({ graceful: false, close: true });
  await bareKoa.stop();
  await db.destroy();
  await database.dispose();
}
