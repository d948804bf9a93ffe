/**
 * A mixed soak: BENCH_CLIENTS clients (20) for BENCH_MINUTES (3; the issue's figure is 60) against a
 * real web process and BENCH_WORKERS real worker processes (2), production settings, sandbox
 * providers. Each client loops over a weighted mix, each action waited for to its end as a client
 * would (polling the API every 200 ms, at most 2 min):
 *   reads 25 % (GET /organizations/{id}, GET /assets), metered reads 25 % (POST /social/net2_profile),
 *   generations 15 % (POST /generations → succeeded), link imports 15 % (POST /assets/imports/link of a
 *   fake upstream on loopback → success), chat turns 12 % (a message, POST /run → succeeded), scheduled
 *   runs 8 % (POST /scheduled-tasks/{id}/trigger → the run succeeded), over BENCH_ORGANIZATIONS (4).
 * Every BENCH_SAMPLE_SECONDS (30) it prints the RSS of the web and worker processes (from /proc) and
 * their heap (process.memoryUsage through bench/support/memory-probe.ts; with --live-heap=1 after a
 * forced GC, so it is the live heap — which changes RSS too), the actions done and the
 * errors since the last sample, and the load. At the end: whether each process's memory is flat over
 * the second half (least-squares slope; flat when the fitted growth over that half is under 10 MiB or
 * 5 %; RSS, and with --live-heap=1 the live heap too), the errors (by action, and error lines the processes logged), and — once the queues are
 * drained — the credit ledger reconciled exactly (src/credits/reconcile.ts) with no hold left open.
 * BENCH_HEAP_SNAPSHOTS=1 takes V8 heap snapshots of each process at half time and at the end
 * (--heapsnapshot-signal) and prints what grew between them, by constructor (a snapshot inflates the
 * process's RSS for the rest of the run: judge that run by the live heap).
 *
 * Flags (or BENCH_*): --minutes (3), --clients (20), --workers (2), --organizations (4), --sample-seconds (30),
 * --heap-snapshots (0), --live-heap (0), --log-level (the processes', warn).
 * Run: npm run bench:soak                       (~4 min)
 *      npm run bench:soak -- --minutes=60       (the issue's hour)
 */
import { readdir, rm, stat } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { mkdtemp } from 'node:fs/promises';
import { reconcileCredits } from '../src/credits/reconcile.ts';
import { createDb } from '../src/db/knex.ts';
import { allJobs } from '../src/app/jobs.ts';
import type { ChildRun } from '../test/support/processes.ts';
import { png } from '../test/assets/helpers.ts';
import { ascending, int, load, loads, num, percentile, readFlags, rssMiB, slope, text, waitFor } from './support/bench.ts';
import { benchDatabase } from './support/database.ts';
import { heapByConstructor, heapGrowth } from './support/heap.ts';
import { benchStack, seedOrganizations } from './support/stack.ts';

readFlags();
const MINUTES = num('MINUTES', 3);
const CLIENTS = Math.max(1, int('CLIENTS', 20));
const WORKERS = Math.max(1, int('WORKERS', 2));
const ORGANIZATIONS = Math.max(1, int('ORGANIZATIONS', 4));
const SAMPLE_SECONDS = Math.max(5, int('SAMPLE_SECONDS', 30));
const HEAP_SNAPSHOTS = int('HEAP_SNAPSHOTS', 0) > 0;
/** Force a GC before each memory probe, so the heap figure is the live heap (this changes how RSS behaves: V8 no longer lets the heap grow before it collects). */
const LIVE_HEAP = int('LIVE_HEAP', 0) > 0;
const heapLabel = LIVE_HEAP ? 'live heap' : 'heap';
const WAIT_MS = 120_000;
const POLL_MS = 200;

// ---------------------------------------------------------------------------------------------------------------------
// The fake upstream link imports fetch from (loopback): small PNGs and text files.

const image = png(64, 48);
const upstream = http.createServer((req, res) => {
  if (req.url?.startsWith('/img/')) {
    res.writeHead(200, { 'content-type': 'image/png' });
    res.end(image);
  } else if (req.url?.startsWith('/doc/')) {
    res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' });
    res.end(`Soak document ${req.url}\n${'All work and no play. '.repeat(40)}`);
  } else {
    res.writeHead(404);
    res.end();
  }
});
await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
const upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;

const database = await benchDatabase();
const db = createDb(database.url, { max: 6 });
const diagnostics = await mkdtemp(path.join(tmpdir(), 'workspace-soak-heap-'));
const stack = await benchStack(
  database.url,
  {
    LOG_LEVEL: text('LOG_LEVEL', 'warn'),
    OUTBOUND_ALLOWLIST: new URL(upstreamUrl).host,
    BENCH_MEMORY_PROBE_MS: String(Math.min(10_000, SAMPLE_SECONDS * 1000)),
  },
  {
    nodeArgs: [
      ...(LIVE_HEAP ? ['--expose-gc'] : []),
      ...['--import', './bench/support/memory-probe.ts', '--heapsnapshot-signal=SIGUSR2', `--diagnostic-dir=${diagnostics}`],
    ],
  },
);

// ---------------------------------------------------------------------------------------------------------------------
// The clients

const organizations = Array.from({ length: ORGANIZATIONS }, (_, i) => `soak-org-${i}`);
let token = '';
let base = '';

interface Answer {
  status: number;
  body: any;
}
async function api(method: string, route: string, body?: unknown): Promise<Answer> {
  const res = await fetch(`${base}${route}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body !== undefined && { 'content-type': 'application/json' }) },
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}
function expectStatus(what: string, answer: Answer, ...statuses: number[]): any {
  if (!statuses.includes(answer.status)) throw new Error(`${what}: ${answer.status} ${JSON.stringify(answer.body).slice(0, 300)}`);
  return answer.body;
}
/** Polls `read` until it returns a value, at most WAIT_MS. */
async function until<T>(what: string, read: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    const value = await read();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`${what}: not done after ${WAIT_MS / 1000} s`);
    await sleep(POLL_MS);
  }
}

interface Client {
  n: number;
  conversationId?: string;
  taskId?: string;
  count: number;
}
const orgOf = (client: Client) => organizations[client.n % ORGANIZATIONS]!;

const actions: Record<string, { weight: number; run: (client: Client) => Promise<void> }> = {
  read: {
    weight: 25,
    async run(client) {
      const org = orgOf(client);
      if (client.count % 2) expectStatus('GET /organizations/{id}', await api('GET', `/organizations/${org}`), 200);
      else expectStatus('GET /assets', await api('GET', `/assets?organization_id=${org}&limit=20`), 200);
    },
  },
  'metered read': {
    weight: 25,
    async run(client) {
      const body = { organization_id: orgOf(client), input: { username: `soak${client.count % 500}` } };
      expectStatus('POST /social/net2_profile', await api('POST', '/social/net2_profile', body), 200);
    },
  },
  generation: {
    weight: 15,
    async run(client) {
      const body = { organization_id: orgOf(client), kind: 'image', prompt: `A soak picture ${client.n}-${client.count}` };
      const { generation } = expectStatus('POST /generations', await api('POST', '/generations', body), 201);
      const status = await until('generation', async () => {
        const g = expectStatus('GET /generations/{id}', await api('GET', `/generations/${generation.id}`), 200).generation;
        return ['queued', 'running'].includes(g.status) ? undefined : (g.status as string);
      });
      if (status !== 'succeeded') throw new Error(`generation ended ${status}`);
    },
  },
  'link import': {
    weight: 15,
    async run(client) {
      const url = `${upstreamUrl}/${client.count % 2 ? 'img' : 'doc'}/${client.n}-${client.count}${client.count % 2 ? '.png' : '.txt'}`;
      const asset = expectStatus('POST /assets/imports/link', await api('POST', '/assets/imports/link', { organization_id: orgOf(client), url }), 201);
      const id = (asset.asset ?? asset).id as string;
      const state = await until('link import', async () => {
        const a = expectStatus('GET /assets/{id}', await api('GET', `/assets/${id}`), 200);
        const current = (a.asset ?? a).upload_file_state as string;
        return current === 'in_progress' ? undefined : current;
      });
      if (state !== 'success') throw new Error(`link import ended ${state}`);
    },
  },
  'chat turn': {
    weight: 12,
    async run(client) {
      if (!client.conversationId) {
        const created = expectStatus(
          'POST /conversations',
          await api('POST', '/conversations', { organization_id: orgOf(client), title: `Soak ${client.n}` }),
          201,
        );
        client.conversationId = (created.conversation ?? created).id as string;
      }
      const c = client.conversationId;
      expectStatus('POST /messages', await api('POST', `/conversations/${c}/messages`, { content: `Question ${client.count}: how is the soak going?` }), 201);
      expectStatus('POST /run', await api('POST', `/conversations/${c}/run`, {}), 201);
      const status = await until('chat turn', async () => {
        const { run } = expectStatus('GET /run', await api('GET', `/conversations/${c}/run`), 200);
        return ['queued', 'running'].includes(run.status) ? undefined : (run.status as string);
      });
      if (status !== 'succeeded') throw new Error(`chat turn ended ${status}`);
    },
  },
  'scheduled run': {
    weight: 8,
    async run(client) {
      const org = orgOf(client);
      if (!client.taskId) {
        const body = {
          organization_id: org,
          title: `Soak task ${client.n}`,
          prompt: 'Summarise the soak so far.',
          schedule: { cron: '0 7 1 1 *', timezone: 'UTC' },
        };
        const created = expectStatus('POST /scheduled-tasks', await api('POST', '/scheduled-tasks', body), 201);
        client.taskId = (created.scheduled_task ?? created).id as string;
      }
      const { run } = expectStatus('POST /trigger', await api('POST', `/scheduled-tasks/${client.taskId}/trigger`), 202);
      const state = await until('scheduled run', async () => {
        const page = expectStatus(
          'GET /scheduled-task-runs',
          await api('GET', `/scheduled-task-runs?organization_id=${org}&task_id=${client.taskId}&limit=5`),
          200,
        );
        const found = (page.items as { id: string; status: string }[]).find((r) => r.id === run.id);
        return !found || ['queued', 'running'].includes(found.status) ? undefined : found.status;
      });
      if (state !== 'succeeded') throw new Error(`scheduled run ended ${state}`);
    },
  },
};
const names = Object.keys(actions);
const totalWeight = names.reduce((sum, name) => sum + actions[name]!.weight, 0);
const pick = () => {
  let r = Math.random() * totalWeight;
  for (const name of names) {
    r -= actions[name]!.weight;
    if (r < 0) return name;
  }
  return names[0]!;
};

const stats = new Map(names.map((name) => [name, { ok: 0, errors: 0, ms: [] as number[] }]));
const errorMessages = new Map<string, number>();
let interval = { ok: 0, errors: 0 };

async function client(n: number, deadline: number): Promise<void> {
  const me: Client = { n, count: 0 };
  while (Date.now() < deadline) {
    const name = pick();
    const started = performance.now();
    me.count += 1;
    try {
      await actions[name]!.run(me);
      stats.get(name)!.ok += 1;
      stats.get(name)!.ms.push(performance.now() - started);
      interval.ok += 1;
    } catch (error) {
      stats.get(name)!.errors += 1;
      interval.errors += 1;
      // fetch's own failures say why in their cause (a reset connection, a refused one).
      const cause = error instanceof Error && error.cause instanceof Error ? ` (${(error.cause as { code?: string }).code ?? error.cause.message})` : '';
      const message = `${name}: ${error instanceof Error ? error.message : String(error)}${cause}`.replace(/[0-9a-f]{8}-[0-9a-f-]{27}/g, '<id>');
      errorMessages.set(message, (errorMessages.get(message) ?? 0) + 1);
      await sleep(200);
    }
  }
}

// ---------------------------------------------------------------------------------------------------------------------
// Memory

interface Sample {
  minute: number;
  rss: number;
  heapUsed: number;
  heapTotal: number;
  external: number;
}
const lastProbe = (child: ChildRun) => {
  const stderr = child.stderr();
  const at = stderr.lastIndexOf('BENCH_MEMORY ');
  if (at < 0) return null;
  const line = stderr.slice(at + 'BENCH_MEMORY '.length, stderr.indexOf('\n', at));
  return JSON.parse(line) as { heapUsed: number; heapTotal: number; external: number; arrayBuffers: number };
};
const mib = (bytes: number) => bytes / 1048576;

async function heapSnapshots(children: [string, ChildRun][]): Promise<Map<string, string>> {
  const before = new Set(await readdir(diagnostics));
  for (const [, child] of children) child.child.kill('SIGUSR2');
  const files = new Map<string, string>();
  await waitFor(
    'the heap snapshots',
    async () => {
      for (const file of await readdir(diagnostics)) {
        if (before.has(file) || !file.endsWith('.heapsnapshot')) continue;
        const owner = children.find(([, c]) => file.includes(`.${c.child.pid}.`));
        if (owner) files.set(owner[0], path.join(diagnostics, file));
      }
      return files.size === children.length ? true : undefined;
    },
    300_000,
    1000,
  );
  // A snapshot is written while its process stands still: done when its size stays put for 3 s.
  let sizes = '';
  await waitFor(
    'the heap snapshots to be written',
    async () => {
      const now = (await Promise.all([...files.values()].map((file) => stat(file).then((s) => s.size)))).join(',');
      const stable = now === sizes;
      sizes = now;
      return stable ? true : undefined;
    },
    600_000,
    3000,
  );
  return files;
}

// ---------------------------------------------------------------------------------------------------------------------

try {
  token = await seedOrganizations(db, organizations);
  const web = await stack.web();
  base = web.url;
  const workers = await stack.workers(db, WORKERS);
  const processes: [string, ChildRun][] = [['web', web.process], ...workers.map((w, i) => [`worker ${i + 1}`, w] as [string, ChildRun])];
  const samples = new Map<string, Sample[]>(processes.map(([name]) => [name, []]));
  console.log(
    `soak: ${CLIENTS} clients for ${MINUTES} min, 1 web + ${WORKERS} worker processes, ${ORGANIZATIONS} organizations, mix ${names.map((n) => `${n} ${actions[n]!.weight}%`).join(', ')}; load ${loads()} (1/5/15 min)`,
  );
  const started = Date.now();
  const deadline = started + MINUTES * 60_000;
  const sample = () => {
    const minute = (Date.now() - started) / 60_000;
    const parts: string[] = [];
    for (const [name, child] of processes) {
      const probe = lastProbe(child);
      const s = {
        minute,
        rss: rssMiB(child.child.pid!),
        heapUsed: mib(probe?.heapUsed ?? Number.NaN),
        heapTotal: mib(probe?.heapTotal ?? Number.NaN),
        external: mib(probe?.external ?? Number.NaN),
      };
      samples.get(name)!.push(s);
      parts.push(`${name} ${s.rss.toFixed(0)} MiB (${heapLabel} ${s.heapUsed.toFixed(0)} of ${s.heapTotal.toFixed(0)}, ext ${s.external.toFixed(0)})`);
    }
    console.log(`  ${minute.toFixed(1).padStart(5)} min: ${parts.join(' · ')} · ${interval.ok} done, ${interval.errors} errors · load ${load()}`);
    interval = { ok: 0, errors: 0 };
  };
  sample();
  const sampler = setInterval(sample, SAMPLE_SECONDS * 1000);
  const halfway: { snapshots?: Promise<Map<string, string>> } = {};
  const halfTimer = HEAP_SNAPSHOTS
    ? setTimeout(
        () => {
          halfway.snapshots = heapSnapshots(processes);
        },
        (MINUTES * 60_000) / 2,
      )
    : null;
  await Promise.all(Array.from({ length: CLIENTS }, (_, n) => client(n, deadline)));
  clearInterval(sampler);
  if (halfTimer) clearTimeout(halfTimer);
  sample();
  const snapshots = halfway.snapshots ? { half: await halfway.snapshots, end: await heapSnapshots(processes) } : null;

  // Drained: no job of ours left queued or running (cron jobs aside), then the ledger.
  const crons = allJobs.filter((job) => job.cron).map((job) => job.name);
  await waitFor(
    'the queues to drain',
    async () => {
      const { rows } = await db.raw(
        `SELECT count(*)::int AS n FROM pgboss.job WHERE state IN ('created', 'retry', 'active') AND name NOT LIKE '\\_\\_%' AND NOT (name = ANY(?))`,
        [crons],
      );
      return rows[0].n === 0 ? true : undefined;
    },
    180_000,
    500,
  );
  const discrepancies = await reconcileCredits(db);
  const { rows: open } = await db.raw(`SELECT count(*)::int AS n FROM credit_holds WHERE captured + released < amount`);
  const { rows: failedJobs } = await db.raw(
    `SELECT name, count(*)::int AS n FROM pgboss.job WHERE state = 'failed' AND name NOT LIKE '%.dead' GROUP BY name ORDER BY n DESC`,
  );

  console.log(`\nactions (${((Date.now() - started) / 60_000).toFixed(1)} min, load ${loads()}):`);
  let errors = 0;
  for (const [name, s] of stats) {
    errors += s.errors;
    const sorted = ascending(s.ms);
    console.log(
      `  ${name.padEnd(14)} ${String(s.ok).padStart(7)} done (${(s.ok / (MINUTES * 60)).toFixed(1)}/s), ${s.errors} errors, p50 ${percentile(sorted, 50).toFixed(0)} ms, p95 ${percentile(sorted, 95).toFixed(0)} ms`,
    );
  }
  for (const [message, n] of [...errorMessages].sort((a, b) => b[1] - a[1]).slice(0, 10)) console.log(`    ${n}× ${message}`);
  const logged = processes.map(([name, child]) => {
    const lines = child.stdout().split('\n');
    const errorLines = lines.filter((l) => /"level":(50|60)/.test(l));
    const warnLines = lines.filter((l) => /"level":40/.test(l));
    return { name, errorLines, warnLines };
  });
  for (const { name, errorLines, warnLines } of logged)
    if (errorLines.length || warnLines.length)
      console.log(
        `  ${name} logged ${errorLines.length} error and ${warnLines.length} warning lines; first: ${(errorLines[0] ?? warnLines[0])!.slice(0, 300)}`,
      );
  console.log(`  jobs failed for good: ${failedJobs.length ? failedJobs.map((r: { name: string; n: number }) => `${r.name} ${r.n}`).join(', ') : 'none'}`);
  console.log(
    `ledger: ${discrepancies.length ? `${discrepancies.length} DISCREPANCIES ${JSON.stringify(discrepancies.slice(0, 3))}` : 'reconciles exactly'}; holds open: ${open[0].n}`,
  );

  console.log(`\nmemory over the second half (${(MINUTES / 2).toFixed(1)} → ${MINUTES} min): least-squares slope, fitted growth over that half`);
  const verdicts: string[] = [];
  for (const [name, list] of samples) {
    const second = list.filter((s) => s.minute >= MINUTES / 2);
    const verdict = (key: 'rss' | 'heapUsed') => {
      const points = second.map((s) => ({ x: s.minute, y: s[key] })).filter((p) => Number.isFinite(p.y));
      const perMinute = slope(points);
      const growth = perMinute * (MINUTES / 2);
      const mean = points.reduce((sum, p) => sum + p.y, 0) / Math.max(1, points.length);
      const flat = Number.isFinite(growth) && growth < Math.max(10, 0.05 * mean);
      return { perMinute, growth, flat, first: list[0]?.[key] ?? Number.NaN, last: list.at(-1)?.[key] ?? Number.NaN };
    };
    const rss = verdict('rss');
    const heap = verdict('heapUsed');
    const line = `${name}: RSS ${rss.first.toFixed(0)} → ${rss.last.toFixed(0)} MiB, ${rss.perMinute >= 0 ? '+' : ''}${rss.perMinute.toFixed(2)} MiB/min (${rss.growth.toFixed(1)} MiB) ${rss.flat ? 'flat' : 'GROWING'}${HEAP_SNAPSHOTS ? ' (a heap snapshot inflates RSS: judge by the heap)' : ''}; ${heapLabel} ${heap.first.toFixed(0)} → ${heap.last.toFixed(0)} MiB, ${heap.perMinute >= 0 ? '+' : ''}${heap.perMinute.toFixed(2)} MiB/min (${heap.growth.toFixed(1)} MiB)${LIVE_HEAP ? ` ${heap.flat ? 'flat' : 'GROWING'}` : ' (between collections: not judged; --live-heap=1 measures the live heap)'}`;
    console.log(`  ${line}`);
    // Without a forced GC the heap figure is a sawtooth (what it holds between collections): only RSS is judged then.
    const flat = rss.flat && (!LIVE_HEAP || heap.flat);
    verdicts.push(
      `${name} ${flat ? 'flat' : 'growing'} (RSS ${rss.first.toFixed(0)}→${rss.last.toFixed(0)} MiB, ${rss.perMinute.toFixed(2)} MiB/min over the 2nd half)`,
    );
  }
  if (snapshots)
    for (const [name] of processes) {
      const [half, end] = [snapshots.half.get(name), snapshots.end.get(name)];
      if (!half || !end) continue;
      console.log(`\nheap growth of ${name}, half time → end (by constructor):`);
      for (const line of heapGrowth(await heapByConstructor(half), await heapByConstructor(end))) console.log(`  ${line}`);
    }
  const done = [...stats.values()].reduce((sum, s) => sum + s.ok, 0);
  console.log(
    `\nsummary: ${new Date().toISOString().slice(0, 10)}, ${MINUTES} min, ${CLIENTS} clients, load ${loads()}: ${done} actions (${(done / (MINUTES * 60)).toFixed(1)}/s), ${errors} errors; ledger ${discrepancies.length ? 'NOT exact' : 'exact'}, ${open[0].n} holds open; ${verdicts.join('; ')}`,
  );
} finally {
  await stack.dispose();
  await db.destroy();
  await database.dispose();
  await new Promise((resolve) => upstream.close(resolve));
  await rm(diagnostics, { recursive: true, force: true });
}
