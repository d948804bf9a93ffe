/**
 * Waiting work at a team's scale (issue 34): N chat turns and N generations started at once by one
 * organization against the sandbox providers with realistic delays, plus one of another
 * organization started meanwhile, on a real web process and one real worker process (production
 * settings: WORKER_WAITING_SLOTS, the fixed pools, the weighted fair share).
 *
 * Per kind it prints, in the same run: one alone; p50/p95/max of the N (from the POST to its end);
 * the other organization's one (started once the N are running); for chat turns the first text's
 * p95 (POST /run → first `delta`/`snapshot` on the SSE stream); the worker's RSS and the database's
 * peak connections (pg_stat_activity, sampled every 50 ms) against the budget.
 *
 * Flags (or BENCH_*): --n (100), --chat-delay-ms (CHAT_SANDBOX_DELAY_MS, 100 between words),
 * --generation-delay-ms (GENERATION_SANDBOX_DELAY_MS, 3000), --web-pool (the web's DB_POOL_MAX, unset:
 * its default), --log-level (warn).
 * Run: npm run bench:waiting -- --n=100      (~1–2 min at N = 100)
 */
import { connectionBudget } from '../src/db/budget.ts';
import { createDb } from '../src/db/knex.ts';
import { testConfig } from '../test/support/config.ts';
import { sseEvents } from '../test/support/sse.ts';
import { ascending, int, percentile, readFlags, rssMiB, text } from './support/bench.ts';
import { benchDatabase } from './support/database.ts';
import { benchStack, seedOrganizations } from './support/stack.ts';

readFlags();
const N = Math.max(1, int('N', 100));
const CHAT_DELAY_MS = String(int('CHAT_DELAY_MS', 100));
const GENERATION_DELAY_MS = String(int('GENERATION_DELAY_MS', 3000));
const WEB_POOL = text('WEB_POOL', '');

const database = await benchDatabase();
const db = createDb(database.url, { max: 4 });
const env = { CHAT_SANDBOX_DELAY_MS: CHAT_DELAY_MS, GENERATION_SANDBOX_DELAY_MS: GENERATION_DELAY_MS, LOG_LEVEL: text('LOG_LEVEL', 'warn') };
const stack = await benchStack(database.url, env);
const [busy, other] = ['bench-busy', 'bench-other'];
const token = await seedOrganizations(db, [busy, other]);
const web = await stack.web(WEB_POOL ? { DB_POOL_MAX: WEB_POOL } : {});
const [worker] = await stack.workers(db, 1);

async function api(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(`${web.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body !== undefined && { 'content-type': 'application/json' }) },
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });
  const answer = await res.text();
  return { status: res.status, body: answer ? JSON.parse(answer) : null };
}
function expectStatus(what: string, res: { status: number; body: unknown }, status: number) {
  if (res.status !== status) throw new Error(`${what}: ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`);
}

/** The most connections of the service's processes seen at once while `work` runs. */
async function peakConnections<T>(work: () => Promise<T>): Promise<{ value: T; peak: { web: number; worker: number } }> {
  const peak = { web: 0, worker: 0 };
  let done = false;
  const watching = (async () => {
    while (!done) {
      const { rows } = await db.raw(
        `SELECT count(*) FILTER (WHERE application_name LIKE 'workspace-web%')::int AS web, count(*) FILTER (WHERE application_name LIKE 'workspace-worker%')::int AS worker
           FROM pg_stat_activity WHERE datname = current_database()`,
      );
      peak.web = Math.max(peak.web, rows[0].web);
      peak.worker = Math.max(peak.worker, rows[0].worker);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  })();
  try {
    return { value: await work(), peak };
  } finally {
    done = true;
    await watching;
  }
}

// --- chat turns -----------------------------------------------------------------------------------
async function conversation(organizationId: string, n: number): Promise<string> {
  const created = await api('POST', '/conversations', { organization_id: organizationId, title: `Waiting turn ${n}` });
  expectStatus('create conversation', created, 201);
  const id = (created.body.conversation?.id ?? created.body.id) as string;
  expectStatus('post message', await api('POST', `/conversations/${id}/messages`, { content: `Question ${n}: how do the tides of the Atlantic work?` }), 201);
  return id;
}

/** POST /run, then its SSE stream until done: first text and end, in ms from the POST. */
async function turn(conversationId: string): Promise<{ first: number; done: number }> {
  const started = performance.now();
  const run = await api('POST', `/conversations/${conversationId}/run`, {});
  expectStatus('POST /run', run, 201);
  const res = await fetch(`${web.url}/conversations/${conversationId}/run/events`, {
    headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream' },
  });
  if (res.status !== 200) throw new Error(`GET /run/events: ${res.status}`);
  let first: number | undefined;
  let done: number | undefined;
  let status: string | undefined;
  for await (const { event, data } of sseEvents(res.body as unknown as AsyncIterable<Uint8Array>)) {
    const at = performance.now() - started;
    const payload = data as { content?: string; text?: string; status?: string };
    if (first === undefined && ((event === 'snapshot' && payload.content) || (event === 'delta' && payload.text))) first = at;
    if (event === 'done') {
      done ??= at;
      status = payload.status;
    }
  }
  if (done === undefined || status !== 'succeeded') throw new Error(`run of ${conversationId} ended ${status}`);
  return { first: first ?? done, done };
}

// --- generations ----------------------------------------------------------------------------------
async function generation(organizationId: string, n: number): Promise<{ done: number }> {
  const started = performance.now();
  const res = await api('POST', '/generations', { organization_id: organizationId, kind: 'image', prompt: `A waiting picture number ${n}` });
  expectStatus('POST /generations', res, 201);
  const id = res.body.generation.id as string;
  for (;;) {
    const { rows } = await db.raw(`SELECT status FROM generations WHERE id = ?`, [id]);
    const status = rows[0]?.status as string | undefined;
    if (status === 'succeeded') return { done: performance.now() - started };
    if (status === 'failed' || status === 'canceled') throw new Error(`generation ${id} ended ${status}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const f = (value: number) => `${(value / 1000).toFixed(2)} s`;
const spread = (values: number[]) => {
  const sorted = ascending(values);
  return `p50 ${f(percentile(sorted, 50))}  p95 ${f(percentile(sorted, 95))}  max ${f(sorted.at(-1)!)}`;
};

/** One alone, then N at once by the busy organization and one of the other's once those run. */
async function measure<T extends { done: number }>(
  kind: string,
  prepare: (org: string, n: number) => Promise<string>,
  start: (prepared: string) => Promise<T>,
) {
  const alone = await start(await prepare(busy, -1));
  const prepared = await Promise.all(Array.from({ length: N }, (_, n) => prepare(busy, n)));
  const otherPrepared = await prepare(other, N);
  const { value, peak } = await peakConnections(async () => {
    const many = Promise.all(prepared.map((p) => start(p)));
    await new Promise((resolve) => setTimeout(resolve, 500)); // the N are sent and running
    const theOther = await start(otherPrepared);
    return { many: await many, theOther };
  });
  const rss = rssMiB(worker!.child.pid!);
  console.log(
    `${kind}: one alone ${f(alone.done)}; ${N} at once ${spread(value.many.map((t) => t.done))} (max ${(Math.max(...value.many.map((t) => t.done)) / alone.done).toFixed(2)}× alone)`,
  );
  console.log(`  the other organization's one, started meanwhile: ${f(value.theOther.done)} (${(value.theOther.done / alone.done).toFixed(2)}× alone)`);
  return { value, peak, rss };
}

const budget = { web: connectionBudget(testConfig(WEB_POOL ? { DB_POOL_MAX: WEB_POOL } : {}), 'web'), worker: connectionBudget(testConfig(), 'worker') };
console.log(
  `bench:waiting — N = ${N}, one web + one worker (WORKER_WAITING_SLOTS default), CHAT_SANDBOX_DELAY_MS ${CHAT_DELAY_MS}, GENERATION_SANDBOX_DELAY_MS ${GENERATION_DELAY_MS}`,
);
try {
  const chat = await measure('chat turns', (org, n) => conversation(org, n), turn);
  const firsts = ascending(chat.value.many.map((t) => (t as { first: number }).first));
  console.log(`  first text of the ${N}: p50 ${percentile(firsts, 50).toFixed(0)} ms  p95 ${percentile(firsts, 95).toFixed(0)} ms`);
  console.log(
    `  worker RSS ${chat.rss.toFixed(0)} MiB; peak connections web ${chat.peak.web} (budget ${budget.web.total}), worker ${chat.peak.worker} (budget ${budget.worker.total})`,
  );
  const gens = await measure(
    'generations',
    async (org, n) => `${org}|${n}`,
    (p) => {
      const [org, n] = p.split('|') as [string, string];
      return generation(org, Number(n));
    },
  );
  console.log(
    `  worker RSS ${gens.rss.toFixed(0)} MiB; peak connections web ${gens.peak.web} (budget ${budget.web.total}), worker ${gens.peak.worker} (budget ${budget.worker.total})`,
  );
} finally {
  await stack.dispose();
  await db.destroy();
  await database.dispose();
}
