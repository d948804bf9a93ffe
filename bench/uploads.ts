/**
 * A large direct upload (tus PATCH) through the real web process, against a bare Node stream of the
 * same bytes to disk in the same run:
 *  (a) baseline: a bare `node:http` server (its own process) piping the request body to a file;
 *  (a') the same server in a process that first loaded the app's modules (src/app/routes.ts): the
 *      web process's heap without its work, which V8 marks in full for the request's dead buffers;
 *  (b) ours: POST /assets/uploads, then one tus PATCH of the whole file to the production web
 *      process, answered once the bytes are written, hashed, type-checked and kept as the asset's
 *      file (the finishing PATCH does all of that before its 204).
 * Each is run RUNS times (3) and the fastest run counts (the machine is shared); (b) after one small upload
 * that warms the web process up (code loaded and compiled on a route's first use).
 * Printed: MB/s of each, the ratio (b)/(a) (target ≥ 0.5), and the web process's RSS growth during
 * (b)'s runs, sampled every 20 ms (target < 64 MiB: the bytes stream, they are never held).
 * Run: npm run bench:uploads [-- --mb=200 --runs=3]   (embedded PostgreSQL, throw-away database and DATA_DIR)
 */
import { execFileSync, spawn } from 'node:child_process';
import { createReadStream, createWriteStream, readFileSync } from 'node:fs';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { once } from 'node:events';
import { request } from 'undici';
import { createDb } from '../src/db/knex.ts';
import { freePort } from '../src/db/embedded.ts';
import { png } from '../test/assets/helpers.ts';
import { int, loads, readFlags, rssMiB } from './support/bench.ts';
import { benchDatabase } from './support/database.ts';
import { benchStack, seedOrganizations } from './support/stack.ts';

readFlags();
const MB = int('MB', 200);
/** Runs of each side; the fastest counts (the machine is shared: the fastest run is the one least disturbed). */
const RUNS = int('RUNS', 3);

async function fastest(run: () => Promise<number>): Promise<number> {
  let best = Number.POSITIVE_INFINITY;
  for (let i = 0; i < RUNS; i++) best = Math.min(best, await run());
  return best;
}
const size = MB * 1024 * 1024;

/** A PNG signature and header, then incompressible bytes: a file that passes the type check. */
async function writeSample(file: string, size: number): Promise<void> {
  const out = createWriteStream(file);
  out.write(png(2, 2));
  let written = png(2, 2).length;
  let x = 12345;
  const block = Buffer.alloc(1024 * 1024);
  while (written < size) {
    for (let i = 0; i < block.length; i += 4) {
      x = (x * 1103515245 + 12345) >>> 0;
      block.writeUInt32LE(x, i);
    }
    const chunk = block.subarray(0, Math.min(block.length, size - written));
    if (!out.write(chunk)) await once(out, 'drain');
    written += chunk.length;
  }
  out.end();
  await once(out, 'finish');
}

/** CPU seconds (user + system) a process has used so far (Linux /proc; clock ticks of 1/100 s). */
function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/**
 * A process's RSS from now until stop(), sampled every 20 ms, and the CPU seconds it used meanwhile
 * (per run: a measure of the work that a shared machine's load does not stretch as it does the wall time).
 */
function rssProbe(pid: number) {
  const cpu = cpuSeconds(pid);
  const before = rssMiB(pid);
  let peak = before;
  const sampler = setInterval(() => {
    peak = Math.max(peak, rssMiB(pid));
  }, 20);
  return {
    stop() {
      clearInterval(sampler);
      return { before, peak, growth: peak - before, cpuPerRun: (cpuSeconds(pid) - cpu) / RUNS };
    },
  };
}

const bareServer = `
const http = require('node:http'); const fs = require('node:fs'); const { pipeline } = require('node:stream/promises');
let n = 0;
(process.env.PRELOAD ? import(process.env.PRELOAD) : Promise.resolve()).then(() =>
  http.createServer(async (req, res) => { await pipeline(req, fs.createWriteStream(process.env.OUT + '.' + n++)); res.writeHead(204).end(); })
    .listen(Number(process.env.PORT), '127.0.0.1', () => console.log('ready')));
`;

async function send(url: string, method: 'PUT' | 'PATCH', file: string, size: number, headers: Record<string, string>): Promise<number> {
  const started = performance.now();
  const res = await request(url, {
    method,
    headers: { 'content-length': String(size), ...headers },
    body: createReadStream(file, { highWaterMark: 1024 * 1024 }),
  });
  const text = await res.body.text();
  if (res.statusCode !== 204) throw new Error(`${method} ${url} answered ${res.statusCode}: ${text.slice(0, 300)}`);
  return (performance.now() - started) / 1000;
}

const database = await benchDatabase();
const dir = await mkdtemp(path.join(tmpdir(), 'workspace-bench-uploads-'));
const stack = await benchStack(database.url, { UPLOAD_MAX_FILE_BYTES: String(size * 2) });
const db = createDb(database.url, { max: 2 });
try {
  const sample = path.join(dir, 'sample.png');
  await writeSample(sample, size);
  const small = path.join(dir, 'small.png');
  await writeSample(small, 1024 * 1024);
  console.log(`upload of ${MB} MiB (${(await stat(sample)).size} bytes), loopback; load average ${loads()} (the machine is shared: read the ratio with it)`);

  /** The bare server `RUNS` times, in a process of its own like the web process: MiB/s of the fastest run and RSS growth. */
  const bareRuns = async (label: string, preload: string | null) => {
    const port = await freePort();
    const args = preload ? ['--import', 'tsx', '-e', bareServer] : ['-e', bareServer];
    const bare = spawn(process.execPath, args, {
      env: { ...process.env, PORT: String(port), OUT: path.join(dir, 'bare'), ...(preload && { PRELOAD: pathToFileURL(preload).href }) },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    await once(bare.stdout!, 'data');
    const bareRss = rssProbe(bare.pid!);
    // The first run also warms the page cache with the sample.
    const bareSeconds = await fastest(() => send(`http://127.0.0.1:${port}/`, 'PUT', sample, size, { 'content-type': 'application/octet-stream' }));
    const bareGrowth = bareRss.stop();
    bare.kill();
    // Its files go before the next side runs, and their dirty pages with them: no side pays for another's writeback.
    for (let i = 0; i < RUNS; i++) await rm(path.join(dir, `bare.${i}`), { force: true });
    execFileSync('sync');
    console.log(
      `${label} ${(MB / bareSeconds).toFixed(0)} MiB/s (${bareSeconds.toFixed(2)} s); its RSS grew ${bareGrowth.growth.toFixed(1)} MiB; CPU ${bareGrowth.cpuPerRun.toFixed(2)} s a run`,
    );
    return { rate: MB / bareSeconds, growth: bareGrowth.growth };
  };
  // (a) the bare stream, the baseline of the goals.
  const { rate: bareRate } = await bareRuns('(a) bare node stream to disk: ', null);
  // (a') the same bare stream in a process holding the app's modules (the web process's heap, no request
  // through the app): what the process's size alone costs a stream of bytes (V8 marks the whole heap for
  // the request's dead buffers), so the part of (b) that is the upload's own work can be read off.
  const { rate: heldRate, growth: heldGrowth } = await bareRuns("(a') the same, app's heap held:", path.resolve('src/app/routes.ts'));

  // (b) ours, through the production web process.
  const web = await stack.web();
  const token = await seedOrganizations(db, ['bench-uploads']);
  /** One upload of `file` (`bytes` long): created, sent in one PATCH, checked to end `success`; its seconds. */
  const upload = async (file: string, bytes: number): Promise<number> => {
    const created = await request(`${web.url}/assets/uploads`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ organization_id: 'bench-uploads', filename: 'sample.png', mime_type: 'image/png', size: bytes }),
    });
    const body = (await created.body.json()) as { upload: { url: string }; asset: { id: string } };
    if (created.statusCode !== 201) throw new Error(`create answered ${created.statusCode}: ${JSON.stringify(body)}`);
    const seconds = await send(body.upload.url, 'PATCH', file, bytes, {
      authorization: `Bearer ${token}`,
      'tus-resumable': '1.0.0',
      'upload-offset': '0',
      'content-type': 'application/offset+octet-stream',
    });
    const state = await db('assets').where({ id: body.asset.id }).first('upload_file_state');
    if (state.upload_file_state !== 'success') throw new Error(`the upload ended ${state.upload_file_state}`);
    return seconds;
  };
  // A small upload first: what the first request of a kind loads and compiles once is no part of streaming bytes.
  await upload(small, 1024 * 1024);
  const webRss = rssProbe(web.process.child.pid!);
  // As many runs as (a) had, the fastest counting; RSS peaks over all of them.
  const oursSeconds = await fastest(() => upload(sample, size));
  const { before, peak, growth, cpuPerRun } = webRss.stop();
  const oursRate = MB / oursSeconds;
  console.log(`(b) tus PATCH, verified + kept: ${oursRate.toFixed(0)} MiB/s (${oursSeconds.toFixed(2)} s); web CPU ${cpuPerRun.toFixed(2)} s a run`);
  console.log(
    `ratio (b)/(a): ${(oursRate / bareRate).toFixed(2)}   (target ≥ 0.5); (a')/(a): ${(heldRate / bareRate).toFixed(2)}, (b)/(a'): ${(oursRate / heldRate).toFixed(2)}`,
  );
  console.log(
    `web RSS: ${before.toFixed(0)} MiB before, ${peak.toFixed(0)} MiB peak: growth ${growth.toFixed(1)} MiB   (target < 64); (a') grew ${heldGrowth.toFixed(1)} MiB`,
  );
} finally {
  await db.destroy();
  await stack.dispose();
  await database.dispose();
  await rm(dir, { recursive: true, force: true });
}
