import { expect } from 'chai';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePort } from '../../src/db/embedded.ts';
import { run } from '../support/processes.ts';
import { request } from '../support/server.ts';

describe('npm start (smoke)', () => {
  let dir: string;
  let group: number | undefined;
  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'workspace-start-'));
    await chmod(dir, 0o755);
  });
  after(async () => {
    // Should the test fail half-way, take down whatever it started (its own process group).
    if (group) {
      try {
        process.kill(-group, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    await rm(dir, { recursive: true, force: true });
  });

  it('serves on an embedded database, accepts a token from `npm run token`, and exits 0 on SIGTERM', async function () {
    this.timeout(180_000);
    const port = await freePort();
    // Whatever the surrounding shell has set must not leak in: this is the fresh-machine path.
    const env = { DATA_DIR: dir, PORT: String(port), DATABASE_URL: '', JWT_SECRET: '', NODE_ENV: 'development', LOG_LEVEL: 'warn' };
    const start = run('npm', ['start', '--silent'], env, { detached: true });
    group = start.child.pid;
    const [, url] = (await start.waitForOutput(/Workspace Platform is serving (http:\/\/\S+)/)) as RegExpMatchArray;
    expect(url).to.equal(`http://localhost:${port}`);
    // Beside the API: its reference page, the embedded database's URL and the data directory.
    const [, database] = (await start.waitForOutput(/Database \(embedded PostgreSQL\): (postgres:\/\/\S+)/)) as RegExpMatchArray;
    expect(start.stdout()).to.include(`API reference: ${url}/docs`);
    expect(start.stdout()).to.include(`Data directory: ${dir} (`);
    expect(database).to.match(/^postgres:\/\/workspace:[^@]+@127\.0\.0\.1:\d+\/\w+$/);
    expect((await request(url!, 'get', '/docs')).status).to.equal(200);

    const health = await request(url!, 'get', '/healthz');
    expect(health.status).to.equal(200);
    const ready = await request(url!, 'get', '/readyz');
    expect(ready.body).to.deep.equal({ status: 'ok', database: 'ok', queue: 'ok' });

    const token = await run('npm', ['run', '--silent', 'token', '--', '--sub', 'smoke-user', '--email', 'smoke@example.test'], env).exited;
    expect(token.code, token.stderr).to.equal(0);
    const jwt = token.stdout.trim();
    expect(jwt).to.match(/^[\w-]+\.[\w-]+\.[\w-]+$/);
    const created = await request(url!, 'post', '/organizations', { token: jwt, body: { name: 'Smoke Test' } });
    expect(created.status).to.equal(201);
    expect(created.body.organization.created_by_id).to.equal('smoke-user');
    // An operator's token for the job console: the console answers it, not the plain one.
    const operator = await run('npm', ['run', '--silent', 'token', '--', '--sub', 'smoke-operator', '--operator'], env).exited;
    expect(operator.code, operator.stderr).to.equal(0);
    expect((await request(url!, 'get', '/ops/workers', { token: operator.stdout.trim() })).status).to.equal(200);
    expect((await request(url!, 'get', '/ops/workers', { token: jwt })).status).to.equal(403);

    // A token minted against another data directory (its own generated secret) is refused saying why.
    const otherDir = await mkdtemp(path.join(tmpdir(), 'workspace-other-'));
    try {
      const foreign = await run('npm', ['run', '--silent', 'token', '--', '--sub', 'smoke-user'], { ...env, DATA_DIR: otherDir }).exited;
      expect(foreign.code, foreign.stderr).to.equal(0);
      const refused = await request(url!, 'get', '/me', { token: foreign.stdout.trim() });
      expect(refused.status).to.equal(401);
      expect(refused.body.message).to.match(/token was signed with another secret .*minted for another data directory or JWT_SECRET/);
    } finally {
      await rm(otherDir, { recursive: true, force: true });
    }

    // SIGTERM to npm alone: it must reach our process (npm scripts `exec`, so no shell swallows it).
    start.child.kill('SIGTERM');
    const exit = await start.exited;
    expect(exit.code, exit.stderr).to.equal(0);
    expect(
      await fetch(`${url}/healthz`).then(
        () => 'up',
        () => 'down',
      ),
    ).to.equal('down');
  });
});
