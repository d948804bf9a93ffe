/**
 * A large direct upload (tus PATCH) through the real web process, against a bare Node stream of the
 * same bytes to disk in the same run:
 *  (a) baseline: a bare `node:http` server (its own process) piping the request body to a file;
 *  (b) ours: POST /assets/uploads, then one tus PATCH of the whole file to the production web
 *      process, answered once the bytes are written, hashed, type-checked and kept as the asset's
 *      file (the finishing PATCH does all of that before its 204).
 * Printed: MB/s of each, the ratio (b)/(a) (target ≥ 0.5), and the web process's RSS growth during
 * (b), sampled every 20 ms (target < 64 MiB: the bytes stream, they are never held).
 * Run: npm run bench:uploads [-- --mb=200]   (embedded PostgreSQL, throw-away database and DATA_DIR)
 */
import { execFileSync, spawn } from 'node:child_process';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
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
const size = MB * 1024 * 1024;

/** A PNG signature and header, then incompressible bytes: a file that passes the type check. */
async function writeSample(file: string): Promise<void> {
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

const bareServer = `
const http = require('node:http'); const fs = require('node:fs'); const { pipeline } = require('node:stream/promises');
let n = 0;
http.createServer(async (req, res) => { await pipeline(req, fs.createWriteStream(process.env.OUT + '.' + n++)); res.writeHead(204).end(); })
  .listen(Number(process.env.PORT), '127.0.0.1', () => console.log('ready'));
`;

async function send(url: string, method: 'PUT' | 'PATCH', file: string, headers: Record<string, string>): Promise<number> {
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
  await writeSample(sample);
  console.log(`upload of ${MB} MiB (${(await stat(sample)).size} bytes), loopback; load average ${loads()} (the machine is shared: read the ratio with it)`);

  // (a) the bare stream, in a process of its own like the web process.
  const port = await freePort();
  const bare = spawn(process.execPath, ['-e', bareServer], {
    env: { ...process.env, PORT: String(port), OUT: path.join(dir, 'bare') },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await once(bare.stdout!, 'data');
  // Twice, the faster counting: the first also warms the page cache with the sample.
  const bareSeconds = Math.min(
    await send(`http://127.0.0.1:${port}/`, 'PUT', sample, { 'content-type': 'application/octet-stream' }),
    await send(`http://127.0.0.1:${port}/`, 'PUT', sample, { 'content-type': 'application/octet-stream' }),
  );
  bare.kill();
  // Its files go before (b) runs, and their dirty pages with them: (b) must not pay for (a)'s writeback.
  for (const name of ['bare.0', 'bare.1']) await rm(path.join(dir, name), { force: true });
  execFileSync('sync');
  const bareRate = MB / bareSeconds;
  console.log(`(a) bare node stream to disk:  ${bareRate.toFixed(0)} MiB/s (${bareSeconds.toFixed(2)} s)`);

  // (b) ours, through the production web process.
  const web = await stack.web();
  const token = await seedOrganizations(db, ['bench-uploads']);
  const created = await request(`${web.url}/assets/uploads`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ organization_id: 'bench-uploads', filename: 'sample.png', mime_type: 'image/png', size }),
  });
  const body = (await created.body.json()) as { upload: { url: string }; asset: { id: string } };
  if (created.statusCode !== 201) throw new Error(`create answered ${created.statusCode}: ${JSON.stringify(body)}`);
  const pid = web.process.child.pid!;
  const rssBefore = rssMiB(pid);
  let rssPeak = rssBefore;
  const sampler = setInterval(() => {
    rssPeak = Math.max(rssPeak, rssMiB(pid));
  }, 20);
  const oursSeconds = await send(body.upload.url, 'PATCH', sample, {
    authorization: `Bearer ${token}`,
    'tus-resumable': '1.0.0',
    'upload-offset': '0',
    'content-type': 'application/offset+octet-stream',
  });
  clearInterval(sampler);
  const state = await db('assets').where({ id: body.asset.id }).first('upload_file_state');
  if (state.upload_file_state !== 'success') throw new Error(`the upload ended ${state.upload_file_state}`);
  const oursRate = MB / oursSeconds;
  console.log(`(b) tus PATCH, verified + kept: ${oursRate.toFixed(0)} MiB/s (${oursSeconds.toFixed(2)} s)`);
  console.log(`ratio (b)/(a): ${(oursRate / bareRate).toFixed(2)}   (target ≥ 0.5)`);
  console.log(`web RSS: ${rssBefore.toFixed(0)} MiB before, ${rssPeak.toFixed(0)} MiB peak: growth ${(rssPeak - rssBefore).toFixed(1)} MiB   (target < 64)`);
} finally {
  await db.destroy();
  await stack.dispose();
  await database.dispose();
  await rm(dir, { recursive: true, force: true });
}
